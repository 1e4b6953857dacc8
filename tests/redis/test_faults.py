"""Real faults, real errors: servers paused, killed, restarted empty, evicting, busy,
read-only or out of memory, and a reply cut in half. Lost replies and outages,
which every server backend meets alike, are in tests/faults/test_network.py.

Each test that hurts a server takes ``private_redis``, a server of its own.
"""

from __future__ import annotations

import threading
import time

import pytest
import redis

from chatledger import (
    BackendError,
    BackendUnavailable,
    MemoryLostError,
    RetryPolicy,
    assistant,
    user,
)
from chatledger._backends.redis.errors import UNAVAILABLE_REPLIES, classify
from chatledger.testing._proxy import FaultProxy
from chatledger.testing._redis_server import RedisCommandError, RedisServer, free_port
from tests.conftest import resumed_after
from tests.redis.conftest import OpenRedis, keys_of, retrying
from tests.unavailable import SLACK, unavailable_in

TIMEOUT = 0.4

paused = resumed_after("private_redis")


def test_a_paused_server_is_unavailable_within_the_timeout(
    open_redis: OpenRedis, paused: RedisServer
) -> None:
    store = open_redis(paused.url, timeout=TIMEOUT)
    store.session("s").append([user("a")])
    paused.pause()
    # A pooled connection, then a fresh one (the kernel accepts it; nobody answers).
    assert unavailable_in(lambda: store.session("s").read()) < TIMEOUT + SLACK
    fresh = open_redis(paused.url, timeout=TIMEOUT)
    assert unavailable_in(lambda: fresh.session("s").append([user("b")])) < TIMEOUT + SLACK
    # With retries, the whole call still ends near the policy's deadline.
    patient = open_redis(paused.url, timeout=TIMEOUT, retry=retrying(attempts=10, deadline=1.0))
    assert unavailable_in(lambda: patient.session("s").read()) < 1.0 + TIMEOUT + SLACK
    paused.resume()
    assert store.session("s").read().version == 1


def test_a_killed_server_is_unavailable(open_redis: OpenRedis,
                                        private_redis: RedisServer) -> None:
    store = open_redis(private_redis.url)
    store.session("s").append([user("a")])
    private_redis.kill()
    with pytest.raises(BackendUnavailable) as caught:
        store.session("s").read()
    assert isinstance(caught.value.__cause__, redis.ConnectionError)
    with pytest.raises(BackendUnavailable):
        open_redis(private_redis.url).session("s").append([user("b")])


def test_a_reply_cut_in_half_is_unavailable_then_retried(
    open_redis: OpenRedis, redis_server: RedisServer
) -> None:
    with FaultProxy(redis_server.host, redis_server.port) as proxy:
        url = f"redis://{proxy.url_netloc}/0"
        store, patient = open_redis(url), open_redis(url, retry=retrying())
        store.session("s").append([user("a long enough message " * 20)])
        proxy.cut_reply()
        with pytest.raises(BackendUnavailable):
            store.session("s").read()
        proxy.cut_reply()
        assert patient.session("s").read().version == 1
        assert proxy.faults_injected == 2


def test_memory_lost_after_a_restart_empty(open_redis: OpenRedis,
                                           private_redis: RedisServer) -> None:
    store = open_redis(private_redis.url, retry=retrying())
    ack = store.session("s").append([user("a"), user("b")])
    private_redis.restart(empty=True)
    with pytest.raises(MemoryLostError) as caught:
        store.session("s").read(last=10, min_version=ack.version)
    assert (caught.value.expected, caught.value.found) == (2, 0)


def test_a_restart_from_the_aof_keeps_every_acknowledged_append(open_redis: OpenRedis) -> None:
    with RedisServer(appendonly=True, extra_args=["--appendfsync", "always"]) as server:
        store = open_redis(server.url, retry=retrying())
        acks = [store.session("s").append([user(f"q{i}"), assistant(f"a{i}")]) for i in range(5)]
        server.restart(empty=False)
        history = store.session("s").read(last=10, min_version=acks[-1].version)
        assert [m.text for m in history] == [t for i in range(5) for t in (f"q{i}", f"a{i}")]
        assert store.session("s").append([user("q0")]).version == 11  # the ledger goes on


def test_memory_lost_after_eviction(open_redis: OpenRedis) -> None:
    policy = ("--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru")
    with RedisServer(extra_args=policy) as server:
        store = open_redis(server.url)
        ack = store.session("s").append([user("remember me"), assistant("I will")])
        keys = keys_of(store, "s")
        filler = redis.Redis(host=server.host, port=server.port)
        with filler:
            batch, deadline = 0, time.monotonic() + 20
            while filler.exists(*keys) == 3 and time.monotonic() < deadline:
                with filler.pipeline(transaction=False) as pipe:
                    for n in range(50):
                        pipe.set(f"junk:{batch}:{n}", b"x" * 10_000)
                    pipe.execute()
                batch += 1
            assert filler.exists(*keys) < 3, "nothing of the session was evicted"
            assert int(filler.info("stats")["evicted_keys"]) > 0
        with pytest.raises(MemoryLostError):
            store.session("s").read(last=10, min_version=ack.version)


def test_memory_lost_after_a_hand_made_delete(open_redis: OpenRedis, raw: redis.Redis) -> None:
    store = open_redis()
    ack = store.session("s").append([user("a")])
    assert raw.delete(*keys_of(store, "s")) == 3
    with pytest.raises(MemoryLostError):
        store.session("s").read(min_version=ack.version)


def test_a_server_busy_with_a_script_is_unavailable(open_redis: OpenRedis) -> None:
    with RedisServer(extra_args=("--lua-time-limit", "20")) as server:
        store = open_redis(server.url)
        store.session("s").append([user("a")])
        spin_errors: list[str] = []
        spinner = threading.Thread(target=_spin, args=(server, spin_errors), daemon=True)
        spinner.start()
        _wait_for_busy(server)
        try:
            with pytest.raises(BackendUnavailable, match="BUSY"):
                store.session("s").read()
        finally:
            server.command("SCRIPT", "KILL")
            spinner.join(5)
        assert len(spin_errors) == 1 and "killed" in spin_errors[0]
        assert store.session("s").read().version == 1


def _spin(server: RedisServer, errors: list[str]) -> None:
    """Run a script that never ends on its own; SCRIPT KILL ends it with an error."""
    try:
        server.command("EVAL", "while true do end", 0, timeout=30)
    except RedisCommandError as exc:
        errors.append(str(exc))


def _wait_for_busy(server: RedisServer) -> None:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            server.command("PING")
        except RedisCommandError as exc:
            assert str(exc).startswith("BUSY")
            return
        time.sleep(0.005)
    raise AssertionError("the server never became busy")


def test_a_replica_refusing_writes_is_unavailable(open_redis: OpenRedis,
                                                  private_redis: RedisServer) -> None:
    store = open_redis(private_redis.url)
    store.session("s").append([user("a")])
    private_redis.command("REPLICAOF", "127.0.0.1", free_port())  # a master that is not there
    try:
        with pytest.raises(BackendUnavailable, match="ReadOnlyError"):
            store.session("s").append([user("b")])
        assert store.session("s").read().version == 1  # stale reads are still served
        private_redis.command("CONFIG", "SET", "replica-serve-stale-data", "no")
        with pytest.raises(BackendUnavailable, match="MasterDownError"):
            store.session("s").read()
    finally:
        private_redis.command("REPLICAOF", "NO", "ONE")
    assert store.session("s").append([user("b")]).version == 2


def test_out_of_memory_writes_nothing_and_is_unavailable(
    open_redis: OpenRedis, private_redis: RedisServer
) -> None:
    store = open_redis(private_redis.url)
    store.session("s").append([user("a")])
    # Below what the server already uses: every write that needs memory is refused.
    private_redis.command("CONFIG", "SET", "maxmemory-policy", "noeviction")
    private_redis.command("CONFIG", "SET", "maxmemory", "100kb")
    with pytest.raises(BackendUnavailable, match="OutOfMemoryError"):
        store.session("s").append([user("b"), user("c")])
    history = store.session("s").read()
    assert (history.version, [m.text for m in history]) == (1, ["a"])


@pytest.mark.parametrize("code", UNAVAILABLE_REPLIES)
def test_every_not_now_reply_is_unavailable(code: str) -> None:
    # redis-py raises a plain ResponseError for the codes it has no class for.
    assert isinstance(classify(redis.ResponseError(f"{code} try later"), "here"),
                      BackendUnavailable)


@pytest.mark.parametrize(("error", "unavailable"), [
    (redis.exceptions.TryAgainError("slot migrating"), True),
    (redis.exceptions.ClusterDownError("hash slot not served"), True),
    (redis.exceptions.MasterDownError("link with master is down"), True),
    (redis.exceptions.BusyLoadingError("loading the dataset"), True),
    (redis.exceptions.ReadOnlyError("replica"), True),
    (redis.TimeoutError("read timed out"), True),
    (ConnectionResetError("reset by peer"), True),
    (redis.exceptions.AuthenticationError("invalid password"), False),
    (redis.exceptions.ResponseError("BUSYKEY target key name already exists"), False),
    (redis.exceptions.ResponseError("WRONGTYPE wrong kind of value"), False),
    (redis.exceptions.DataError("bad argument"), False),
])
def test_driver_errors_are_classified_by_what_a_retry_can_fix(error: Exception,
                                                              unavailable: bool) -> None:
    translated = classify(error, "redis://here")
    assert isinstance(translated, BackendError)
    assert isinstance(translated, BackendUnavailable) is unavailable
    assert "redis://here" in str(translated)


def test_the_default_policy_gives_up_within_its_deadline(open_redis: OpenRedis,
                                                        paused: RedisServer) -> None:
    store = open_redis(paused.url, timeout=TIMEOUT, retry=RetryPolicy(deadline=1.5))
    paused.pause()
    assert unavailable_in(lambda: store.session("s").read()) < 1.5 + TIMEOUT + SLACK


def test_a_full_server_refuses_a_new_session_too(open_redis: OpenRedis,
                                                 private_redis: RedisServer) -> None:
    store = open_redis(private_redis.url)
    private_redis.command("CONFIG", "SET", "maxmemory-policy", "noeviction")
    private_redis.command("CONFIG", "SET", "maxmemory", "100kb")
    with pytest.raises(BackendUnavailable, match="OutOfMemoryError"):
        store.session("new").append([user("a")])
    assert store.session("new").info() is None
