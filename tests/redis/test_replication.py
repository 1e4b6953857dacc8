"""``wait_replicas``: an append is acknowledged only once replicas confirm it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

from chatledger import (
    BackendUnavailable,
    ConfigError,
    ConflictError,
    RetryPolicy,
    open_async_store,
    open_store,
    user,
)
from chatledger.testing._redis_server import RedisServer
from tests.redis.conftest import OpenRedis


@pytest.fixture
def pair() -> Iterator[tuple[RedisServer, RedisServer]]:
    """A master and one replica, linked."""
    # No diskless-sync delay: the replica's first sync starts at once, not after 5 s.
    with RedisServer(extra_args=["--repl-diskless-sync-delay", "0"]) as master, \
            RedisServer(extra_args=["--replicaof", "127.0.0.1", str(master.port)]) as replica:
        deadline = time.monotonic() + 10
        while b"state=online" not in master.info("replication"):
            assert time.monotonic() < deadline, "the replica never connected"
            time.sleep(0.05)
        yield master, replica


def test_an_append_waits_for_the_replica(pair: tuple[RedisServer, RedisServer],
                                         open_redis: OpenRedis) -> None:
    master, replica = pair
    store = open_redis(master.url, wait_replicas=1, wait_timeout=1.5)
    ack = store.session("s").append([user("replicated")])
    assert ack.version == 1
    # Confirmed means already there: read the replica at once, no polling.
    on_replica = open_redis(replica.url)
    assert [m.text for m in on_replica.session("s").read()] == ["replicated"]
    assert store.session("s").trim(keep_last=0) == 1
    assert store.session("s").delete() is True
    with pytest.raises(ConflictError):
        store.session("t").append([user("x")], expect_version=4)


def test_a_short_count_is_unavailable_and_the_retry_stores_once(
    pair: tuple[RedisServer, RedisServer], open_redis: OpenRedis
) -> None:
    master, replica = pair
    store = open_redis(master.url, wait_replicas=1, wait_timeout=0.2)
    batch = [user("q"), user("a")]
    replica.pause()
    try:
        with pytest.raises(BackendUnavailable, match="0 of 1 replicas confirmed the write"):
            store.session("s").append(batch)
        with pytest.raises(BackendUnavailable):  # the retry is no write, yet it waits too
            store.session("s").append(batch)
    finally:
        replica.resume()
    confirmed = open_redis(master.url, wait_replicas=1, wait_timeout=1.5)
    ack = confirmed.session("s").append(batch)
    assert (ack.first_seq, ack.last_seq, ack.deduplicated) == (1, 2, True)
    assert [m.text for m in open_redis(replica.url).session("s").read()] == ["q", "a"]


def test_the_store_retries_until_the_replica_catches_up(
    pair: tuple[RedisServer, RedisServer], open_redis: OpenRedis
) -> None:
    master, replica = pair
    patient = RetryPolicy(attempts=30, backoff=0.05, max_backoff=0.2, deadline=20)
    store = open_redis(master.url, wait_replicas=1, wait_timeout=0.2, retry=patient)
    replica.pause()
    waker = threading.Timer(0.5, replica.resume)
    try:
        waker.start()
        ack = store.session("s").append([user("eventually")])
    finally:
        waker.join()
    assert ack.version == 1
    assert open_redis(replica.url).session("s").read().version == 1


def test_async_waits_too(pair: tuple[RedisServer, RedisServer], namespace: str) -> None:
    master, replica = pair

    async def main() -> None:
        async with await open_async_store(master.url, namespace=namespace, wait_replicas=1,
                                          wait_timeout=1.0, retry=RetryPolicy.none()) as store:
            assert (await store.session("s").append([user("x")])).version == 1
            replica.pause()
            try:
                with pytest.raises(BackendUnavailable, match="0 of 1"):
                    await store.session("s").append([user("y")])
            finally:
                replica.resume()
            assert (await store.session("s").read()).version == 2

    asyncio.run(main())


def test_scripts_reloaded_after_a_flush_still_wait(pair: tuple[RedisServer, RedisServer],
                                                   open_redis: OpenRedis) -> None:
    master, _ = pair
    store = open_redis(master.url, wait_replicas=1, wait_timeout=1.5)
    master.command("SCRIPT", "FLUSH")
    assert store.session("s").append([user("x")]).version == 1

    async def main() -> int:
        async with await open_async_store(master.url, namespace=store.namespace,
                                          wait_replicas=1, wait_timeout=1.5) as astore:
            master.command("SCRIPT", "FLUSH")
            return (await astore.session("s").append([user("y")])).version

    assert asyncio.run(main()) == 2


def test_without_replicas_the_wait_cannot_succeed(open_redis: OpenRedis) -> None:
    store = open_redis(wait_replicas=1, wait_timeout=0.05)
    with pytest.raises(BackendUnavailable, match="0 of 1"):
        store.session("s").append([user("x")])


@pytest.mark.parametrize(
    ("options", "message"),
    [({"wait_replicas": -1}, "wait_replicas=-1 is not a number of replicas"),
     ({"wait_replicas": "two"}, "is not a number of replicas"),
     ({"wait_timeout": 0}, "must be positive"),
     ({"wait_timeout": 5, "timeout": 5}, "must be less than timeout")],
)
def test_bad_replication_options(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        open_store("redis://127.0.0.1:1/0", **options)


def test_a_replica_url_refuses_the_write_before_any_wait(
    pair: tuple[RedisServer, RedisServer], open_redis: OpenRedis
) -> None:
    _, replica = pair
    store = open_redis(replica.url, wait_replicas=1, wait_timeout=0.1)
    with pytest.raises(BackendUnavailable, match=r"READONLY|read only|replica"):
        store.session("s").append([user("x")])


def test_async_a_replica_url_refuses_the_write(pair: tuple[RedisServer, RedisServer],
                                               namespace: str) -> None:
    _, replica = pair

    async def main() -> None:
        async with await open_async_store(replica.url, namespace=namespace, wait_replicas=1,
                                          wait_timeout=0.1, retry=RetryPolicy.none()) as store:
            await store.session("s").append([user("x")])

    with pytest.raises(BackendUnavailable, match=r"READONLY|read only|replica"):
        asyncio.run(main())
