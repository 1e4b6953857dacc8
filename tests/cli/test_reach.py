"""A store that cannot be used: exit 2, one line, the password hidden, a word while retrying."""

from __future__ import annotations

import asyncio

import pytest
from click.testing import CliRunner

from chatledger import BackendUnavailable, RetryPolicy, open_async_store, open_store
from chatledger import _events as events
from chatledger._cli import main
from chatledger._cli.failures import refused_by
from chatledger.testing import RedisServer, free_port

COMMANDS = [["sessions"], ["show", "s"], ["export"], ["import", "-"], ["delete", "s", "--yes"],
            ["purge", "--all", "--yes"], ["doctor"], ["bench", "--lengths", "10"],
            ["demo", "--session", "d"], ["verify", "--duration", "1"]]


@pytest.fixture(scope="module")
def down_url() -> str:
    """A Redis URL, with a password, where nothing listens."""
    return f"redis://ops:s3cret@127.0.0.1:{free_port()}/0"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_down_server_is_exit_2_after_saying_it_retries(down_url: str,
                                                        command: list[str]) -> None:
    result = CliRunner().invoke(main, [*command, "--url", down_url, "--deadline", "0.3"],
                                input="")
    assert result.exit_code == 2, result.output
    redacted = down_url.replace("s3cret", "***")
    assert f"{redacted} does not answer" in result.stderr
    assert "retrying for up to 0.3 s" in result.stderr
    assert f"gave up on {redacted} after" in result.stderr
    assert "Connection refused" in result.stderr
    assert "s3cret" not in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
def test_a_refused_connection_is_one_line_at_once_naming_the_address(
        down_url: str, command: list[str]) -> None:
    calls: list[events.Operation] = []
    with events.listening(calls.append):
        result = CliRunner().invoke(main, [*command, "--url", down_url], input="")
    assert result.exit_code == 2, result.output
    port = down_url.rsplit(":", 1)[1].split("/", 1)[0]
    assert result.stderr.splitlines() == [
        f"Error: 127.0.0.1:{port} refused the connection (redis://ops:***@127.0.0.1:{port}/0): "
        "nothing listens there; check the host and port, or give --deadline SECONDS to wait "
        "for a server that is starting"]
    assert calls == []  # not one store call: no retry, nothing to wait for


@pytest.mark.parametrize("deadline", ["--deadline", "retry_deadline="])
def test_a_deadline_asked_for_retries_a_refused_connection(down_url: str,
                                                           deadline: str) -> None:
    args = ["--url", down_url, "--deadline", "0.3"] if deadline == "--deadline" else \
        ["--url", f"{down_url}?retry_deadline=0.3"]
    calls: list[events.Operation] = []
    with events.listening(calls.append):
        result = CliRunner().invoke(main, ["sessions", *args])
    assert result.exit_code == 2, result.output
    assert "retrying for up to 0.3 s more" in result.stderr
    assert [call.name for call in calls] == ["info"] and calls[0].attempts > 1


def test_a_refusal_is_found_down_the_chain_of_causes() -> None:
    assert refused_by(ConnectionRefusedError(111, "Connection refused")) == "the server"
    assert refused_by(ConnectionResetError()) is None
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__cause__, second.__cause__ = second, first  # a loop ends the walk
    assert refused_by(first) is None


@pytest.mark.parametrize("url", ["nosuch://x", "redis://h:notaport/0", "sqlite://",
                                 "redis://u:s3cret@127.0.0.1:1/0?colour=red",
                                 "redis://:s3cret@Lima2?s3cret@127.0.0.1:1/0",
                                 "redis://:s3cret@Lima2/s3cret@127.0.0.1:1/0"])
def test_a_bad_url_is_a_usage_error_without_the_password(url: str) -> None:
    result = CliRunner().invoke(main, ["sessions", "--url", url])
    assert result.exit_code == 2, result.output
    assert "Error: ConfigError: " in result.output
    assert "s3cret" not in result.output and "Lima2" not in result.output


def test_the_group_and_environment_take_the_deadline_too(down_url: str) -> None:
    result = CliRunner().invoke(main, ["--deadline", "0.2", "sessions", "--url", down_url])
    assert result.exit_code == 2 and "retrying for up to 0.2 s" in result.stderr


def test_rediss_against_a_plaintext_server_hints_tls() -> None:
    with RedisServer() as server:
        url = f"rediss://127.0.0.1:{server.port}/0?timeout=0.3&ssl_cert_reqs=none"
        result = CliRunner().invoke(main, ["sessions", "--url", url, "--deadline", "0.3"])
    assert result.exit_code == 2
    assert "hint: rediss:// speaks TLS" in result.stderr


def test_sentinel_pointed_at_a_plain_redis_says_so(redis_url: str) -> None:
    port = redis_url.rsplit(":", 1)[1].split("/", maxsplit=1)[0]
    result = CliRunner().invoke(main, ["sessions", "--url",
                                       f"redis+sentinel://127.0.0.1:{port}/mymaster"])
    assert result.exit_code == 2
    assert "hint: the address in the URL is a Redis server, not a Sentinel" in result.output


def test_sentinel_pointed_at_a_redis_with_a_password_says_so_in_one_short_line() -> None:
    """redis-py lists each failed sentinel as its client's whole repr (~1 KB): not shown."""
    with RedisServer() as server:
        server.command("CONFIG", "SET", "requirepass", "s3cret")
        url = f"redis+sentinel://:s3cret@127.0.0.1:{server.port}/mymaster"
        with pytest.raises(BackendUnavailable) as caught:
            open_store(url, retry=RetryPolicy.none()).session("s").read()
        result = CliRunner().invoke(main, ["sessions", "--url", url, "--deadline", "0.3"])

        async def read_async() -> None:
            store = await open_async_store(url, retry=RetryPolicy.none())
            try:
                await store.session("s").read()
            finally:
                await store.close()

        with pytest.raises(BackendUnavailable) as caught_async:
            asyncio.run(read_async())
    said = f"127.0.0.1:{server.port} does not answer as a Sentinel (auth:AuthenticationError)"
    for message in (str(caught.value), str(caught_async.value)):
        assert said in message, message
        assert "No master found for 'mymaster'" in message
        assert "ConnectionPool" not in message and "s3cret" not in message
        assert "\n" not in message and len(message) < 300
    assert result.exit_code == 2
    assert said in result.stderr and "ConnectionPool" not in result.stderr
    assert "hint: the address asked for a password" in result.stderr


def test_sentinel_where_nothing_listens_names_the_address_in_one_short_line() -> None:
    port = free_port()
    with pytest.raises(BackendUnavailable) as caught:
        open_store(f"redis+sentinel://127.0.0.1:{port}/mymaster",
                   retry=RetryPolicy.none()).session("s").read()
    message = str(caught.value)
    assert f"127.0.0.1:{port} does not answer as a Sentinel" in message
    assert "ConnectionPool" not in message and len(message) < 300


def test_a_server_that_comes_back_is_reached_and_said_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from chatledger._cli import target

    with RedisServer() as server:
        said = target.note

        def resume_once_told(text: str) -> None:
            said(text)
            server.resume()  # the first attempt failed; the retry finds the server back

        monkeypatch.setattr(target, "note", resume_once_told)
        server.pause()
        result = CliRunner().invoke(main, ["sessions", "--json",
                                           "--url", f"{server.url}?timeout=0.2"])
    assert result.exit_code == 0, result.output
    assert "does not answer" in result.stderr
    assert f"{server.url}?timeout=0.2 answered after" in result.stderr
    assert '"sessions": []' in result.stdout


PG_COMMANDS = [["sessions"], ["show", "s"], ["export"], ["doctor"]]


@pytest.mark.parametrize("command", PG_COMMANDS, ids=lambda c: c[0])
def test_a_refused_postgresql_connection_is_one_line_at_once(command: list[str]) -> None:
    """PostgreSQL connects when the store opens (its schema check): refused there, not
    after the retries and the pool's wait, and none of psycopg's pool logging."""
    port = free_port()
    url = f"postgresql://nobody:s3cret@127.0.0.1:{port}/x"
    calls: list[events.Operation] = []
    with events.listening(calls.append):
        result = CliRunner().invoke(main, [*command, "--url", url], input="")
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        f"Error: 127.0.0.1:{port} refused the connection "
        f"(postgresql://nobody:***@127.0.0.1:{port}/x): nothing listens there; check the host "
        "and port, or give --deadline SECONDS to wait for a server that is starting"]
    assert calls == []


def test_a_postgresql_deadline_asked_for_retries_the_opening_and_gives_up() -> None:
    url = f"postgresql://nobody@127.0.0.1:{free_port()}/x"
    result = CliRunner().invoke(main, ["sessions", "--url", url, "--deadline", "0.3"])
    assert result.exit_code == 2, result.output
    assert f"{url} does not answer" in result.stderr
    assert "retrying for up to 0.3 s more" in result.stderr
    assert f"gave up on {url} after" in result.stderr and "Connection refused" in result.stderr


def test_a_postgresql_that_answers_on_the_retry_is_opened_and_said_so(
        postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from chatledger._cli import target
    from chatledger.testing import FaultProxy

    server = postgres_url.rsplit("@", 1)[1].split("/", 1)[0]
    host, port = server.rsplit(":", 1)
    with FaultProxy(host, int(port)) as proxy:
        said = target.note

        def heal_once_told(text: str) -> None:
            said(text)
            proxy.clear()  # the first attempt was reset; the retry gets through

        monkeypatch.setattr(target, "note", heal_once_told)
        proxy.refuse()
        url = postgres_url.replace(server, proxy.url_netloc)
        result = CliRunner().invoke(main, ["sessions", "--json", "--url", url])
    assert result.exit_code == 0, result.output
    assert "does not answer" in result.stderr and "answered after" in result.stderr
    assert '"sessions": []' in result.stdout
