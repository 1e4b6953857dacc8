"""Store URL options as a new user writes them: repeats, typos, bad numbers and ports."""

from __future__ import annotations

import pytest

from chatledger import ConfigError, open_store
from chatledger._url import parse_url

# Every built-in scheme: each parses its URL before it loads a driver or connects.
SCHEMES = ["memory://", "sqlite:///dup.db", "redis://127.0.0.1:1/0", "rediss://127.0.0.1:1/0",
           "unix:///run/redis.sock", "redis+sentinel://127.0.0.1:1/mymaster",
           "redis+cluster://127.0.0.1:1", "rediss+cluster://127.0.0.1:1",
           "postgresql://u@127.0.0.1:1/db", "postgres://u@127.0.0.1:1/db",
           "dynamodb://127.0.0.1:1/table"]


@pytest.mark.parametrize("base", SCHEMES)
def test_an_option_given_twice_is_refused_naming_it_and_its_values(
        base: str, tmp_path: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        open_store(f"{base}?ttl=100&ttl=999999&namespace=a&namespace=b")
    message = str(caught.value)
    assert "'ttl' 2 times ('100', '999999')" in message
    assert "'namespace' 2 times ('a', 'b')" in message
    assert not (tmp_path / "dup.db").exists()  # type: ignore[operator]


def test_a_repeated_option_is_refused_even_with_the_same_value_and_a_secret_stays_hidden() -> None:
    with pytest.raises(ConfigError, match=r"'namespace' 2 times \('a', 'a'\)"):
        parse_url("memory://?namespace=a&namespace=a")
    with pytest.raises(ConfigError) as caught:
        parse_url("redis+sentinel://h:26379/m?sentinel_password=s3cret&sentinel_password=t0p")
    assert "'sentinel_password' 2 times" in str(caught.value)
    assert "s3cret" not in str(caught.value) and "t0p" not in str(caught.value)
    assert parse_url("memory://?namespace=a&ttl=5").query == {"namespace": "a", "ttl": "5"}


@pytest.mark.parametrize(("url", "options", "message"), [
    ("memory://?ttl=abc", {}, "ttl must be a number of seconds, got 'abc'"),
    ("memory://", {"ttl": "1h"}, "ttl must be a number of seconds, got '1h'"),
    ("memory://?timeout=soon", {}, "timeout must be a number of seconds, got 'soon'"),
    ("memory://", {"timeout": "2s"}, "timeout must be a number of seconds, got '2s'"),
    ("memory://?max_message_bytes=1k", {}, "max_message_bytes must be a positive int, got '1k'"),
])
def test_a_number_option_that_is_not_a_number_says_so(
        url: str, options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        open_store(url, **options)
    assert str(caught.value) == message
    assert "could not convert" not in str(caught.value)


@pytest.mark.parametrize("url", ["redis://127.0.0.1:99999/0", "redis://127.0.0.1:65536/0",
                                 "redis://127.0.0.1:0/0", "postgresql://u@h:70000/db",
                                 "redis+sentinel://h:26379,h:99999/m"])
def test_a_port_out_of_range_says_so_not_that_a_password_needs_encoding(url: str) -> None:
    port = url.rsplit(":", 1)[1].split("/", 1)[0]
    with pytest.raises(ConfigError) as caught:
        open_store(url)
    assert f"port {port} of store URL" in str(caught.value)
    assert "is out of range 1-65535" in str(caught.value)
    assert "percent-encoded" not in str(caught.value)


def test_with_a_password_an_out_of_range_port_names_both_causes_and_hides_it() -> None:
    with pytest.raises(ConfigError) as caught:
        open_store("redis://u:s3cret@127.0.0.1:99999/0")
    assert "out of range 1-65535" in str(caught.value) and "percent-encoded" in str(caught.value)
    assert "s3cret" not in str(caught.value)
    assert parse_url("redis://127.0.0.1:65535/0").hosts == [("127.0.0.1", 65535)]
    assert parse_url("redis://127.0.0.1:1/0").hosts == [("127.0.0.1", 1)]


@pytest.mark.parametrize(("url", "guess", "backend_option"), [
    ("sqlite:///x.db?tiemout=3", "timeout", "synchronous"),
    ("memory://?namespce=a", "namespace", None),
    ("redis://127.0.0.1:1/0?wait_replica=1", "wait_replicas", "max_connections"),
    ("redis+sentinel://127.0.0.1:1/m?sentinel_pasword=x", "sentinel_password", "db"),
])
def test_an_unknown_option_lists_every_option_and_the_close_one(
        url: str, guess: str, backend_option: str | None, tmp_path: object,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        open_store(url)
    message = str(caught.value)
    assert f"did you mean {guess!r}?" in message
    for common in ("namespace", "ttl", "timeout", "touch_on_read", "max_message_bytes",
                   "retry_deadline"):
        assert common in message.split("options: ", 1)[1]
    if backend_option:
        assert backend_option in message


def test_an_unknown_option_far_from_any_guesses_nothing() -> None:
    with pytest.raises(ConfigError) as caught:
        open_store("memory://?speed=fast")
    assert "unknown option 'speed' for memory://" in str(caught.value)
    assert "did you mean" not in str(caught.value)


@pytest.mark.parametrize("url", ["redis://127.0.0.1:1/abc", "redis://127.0.0.1:1/1.5",
                                 "redis://127.0.0.1:1/-1", "redis://127.0.0.1:1/0/1",
                                 "rediss://127.0.0.1:1/x", "redis://127.0.0.1:1/0?db=one",
                                 "redis+sentinel://127.0.0.1:1/mymaster/x"])
def test_a_database_that_is_not_a_number_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError, match=r"is not a database number \(0, 1, 2, \.\.\.\)"):
        open_store(url)
