"""``chatledger doctor`` against real, private redis-server processes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from chatledger._backends.redis.health import _version
from chatledger._cli import main
from chatledger._doctor import Check, Report, diagnose
from chatledger.testing._redis_server import RedisServer


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with RedisServer() as redis_server:
        yield redis_server


def _by_name(report: Report) -> dict[str, Check]:
    return {check.name: check for check in report.checks}


def test_a_plain_server_is_usable_but_warned_about_persistence(server: RedisServer) -> None:
    result = CliRunner().invoke(main, ["doctor", server.url])
    assert result.exit_code == 0, result.output
    assert "WARN  persistence  no AOF and no RDB" in result.output
    assert "ok    round trip" in result.output
    assert "ok    version      Redis 7" in result.output
    assert "0 error(s), 1 warning(s)" in result.output
    scripts = _by_name(diagnose(server.url))["scripts"]
    # The CLI asked for a session's state before the checks (is the store there?),
    # which loaded the info script; the round trip loads the others but trim.
    assert scripts.detail == "not loaded yet: trim (loaded on first use)"
    assert scripts.value == 4  # info (the CLI's probe), append, read and delete


def test_json_output_is_machine_readable(server: RedisServer) -> None:
    result = CliRunner().invoke(main, ["--url", server.url, "doctor", "--json"])
    document = json.loads(result.output)
    assert document["ok"] is True
    checks = {c["name"]: c for c in document["checks"]}
    assert checks["latency"]["value"] > 0
    assert checks["eviction"]["value"] == {"maxmemory": 0, "maxmemory_policy": "noeviction"}


@pytest.mark.parametrize(
    ("policy", "status", "words"),
    [("allkeys-lru", "warn", "DELETES ANY KEY"), ("volatile-ttl", "warn", "evict them early"),
     ("noeviction", "ok", "never evicted")],
)
def test_eviction_policies_under_a_memory_limit(server: RedisServer, policy: str, status: str,
                                                words: str) -> None:
    server.command("CONFIG", "SET", "maxmemory", "100mb")
    server.command("CONFIG", "SET", "maxmemory-policy", policy)
    check = _by_name(diagnose(server.url))["eviction"]
    assert (check.status, check.value["maxmemory_policy"]) == (status, policy)
    assert words in check.detail


def test_persistence_is_recognised(tmp_path: Path) -> None:
    with RedisServer(appendonly=True) as server:
        check = _by_name(diagnose(server.url))["persistence"]
        assert check.status == "ok"
        assert check.value == {"aof": True, "rdb": False}
        assert "appendfsync everysec" in check.detail
        server.command("CONFIG", "SET", "save", "3600 1")
        assert _by_name(diagnose(server.url))["persistence"].value == {"aof": True, "rdb": True}


def test_a_server_that_refuses_config_is_reported_as_unknown() -> None:
    with RedisServer(extra_args=["--rename-command", "CONFIG", ""]) as server:
        check = _by_name(diagnose(server.url))["persistence"]
        assert check.status == "warn"
        assert "unknown (CONFIG refused)" in check.detail


def test_replicas_are_counted_and_a_replica_url_fails(server: RedisServer) -> None:
    with RedisServer(extra_args=["--replicaof", "127.0.0.1", str(server.port)]) as replica:
        _wait_for_link(server)
        master = _by_name(diagnose(server.url))["replication"]
        assert (master.status, master.value["replicas"]) == ("ok", 1)
        result = CliRunner().invoke(main, ["doctor", replica.url])
        assert result.exit_code == 1
        assert "FAIL  replication  this server is a slave: it refuses writes" in result.output
        assert "round trip" not in result.output


def _wait_for_link(master: RedisServer) -> None:
    import time

    deadline = time.monotonic() + 10
    while b"connected_slaves:1" not in master.info("replication"):
        assert time.monotonic() < deadline, "the replica never connected"
        time.sleep(0.05)


def test_an_unreachable_server_is_a_connection_error(server: RedisServer) -> None:
    url = server.url
    server.kill()
    result = CliRunner().invoke(main, ["doctor", url, "--deadline", "0.5"])
    assert result.exit_code == 2  # could not run, within the deadline it was given
    assert "gave up on" in result.output and "ConnectionError" in result.output


def test_a_hung_server_fails_within_the_timeout(server: RedisServer) -> None:
    server.pause()
    try:
        report = diagnose(server.url, timeout=0.3)
    finally:
        server.resume()
    assert report.failed
    assert "Timeout" in report.checks[0].detail


def test_sqlite_and_memory_are_diagnosed_too(tmp_path: Path) -> None:
    report = diagnose(f"sqlite:///{tmp_path}/d.db")
    assert [(c.name, c.status) for c in report.checks] == [
        ("journal", "ok"), ("integrity", "ok"), ("file", "info"), ("round trip", "ok")]
    memory = diagnose("memory://")
    assert _by_name(memory)["durability"].status == "warn"
    assert not memory.failed


def test_bad_urls_and_files_fail(tmp_path: Path) -> None:
    assert diagnose("nosuch://x").checks[0].detail.startswith("ConfigError: unknown store URL")
    (tmp_path / "junk.db").write_bytes(b"junk" * 1000)
    assert diagnose(f"sqlite:///{tmp_path}/junk.db").failed


def test_old_servers_are_warned_about() -> None:
    assert _version({"redis_version": "5.0.14"}).status == "warn"
    assert _version({"redis_version": "7.2.4", "redis_mode": "cluster"}).detail == \
        "Redis 7.2.4 (cluster)"


@pytest.mark.parametrize(
    ("setting", "error"),
    [(("maxmemory", "100kb"), "OutOfMemoryError"),  # below what it already uses
     (("min-replicas-to-write", "1"), "NOREPLICAS")],
)
def test_a_server_that_refuses_writes_fails_the_round_trip(
    server: RedisServer, setting: tuple[str, str], error: str
) -> None:
    server.command("CONFIG", "SET", *setting)
    report = diagnose(server.url)
    assert report.failed
    assert report.checks[-1].name == "round trip"
    assert error in report.checks[-1].detail


def test_scripts_are_all_loaded_once_every_operation_ran(server: RedisServer) -> None:
    from chatledger import open_store, user

    with open_store(server.url) as store:
        store.session("s").append([user("x")])
        store.session("s").info()
        store.session("s").read()
        store.session("s").trim(keep_last=1)
        store.session("s").delete()
    scripts = _by_name(diagnose(server.url))["scripts"]
    assert (scripts.status, scripts.value) == ("ok", 5)


def test_doctor_follows_sentinel_to_the_master(sentinel_url: str) -> None:
    report = diagnose(sentinel_url)
    checks = _by_name(report)
    assert not report.failed
    assert checks["replication"].value == {"role": "master", "replicas": 1}
    assert checks["round trip"].status == "ok"
