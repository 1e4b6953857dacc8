"""Promise 5 on every path: a call ends within its deadline whatever the server does,
and a retried append never lands on a ledger other than the one it aimed at."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from chatledger import (
    BackendUnavailable,
    MemoryLostError,
    RetryPolicy,
    open_async_store,
    open_store,
    user,
)
from chatledger.testing import FaultProxy, RedisServer

# Per-read timeout (1 s) far above the drip (a byte every 0.05 s): only a
# deadline on the whole call can end it. A 2-message read is ~300 bytes: 15 s.
TIMEOUT, DEADLINE, DRIP = 1.0, 1.5, 0.05


@pytest.fixture
def proxy(redis_server: RedisServer) -> Iterator[FaultProxy]:
    with FaultProxy(redis_server.host, redis_server.port) as proxy:
        yield proxy


def _options(namespace: str, timeout: float = TIMEOUT) -> dict[str, object]:
    return {"namespace": namespace, "timeout": timeout,
            "retry": RetryPolicy(attempts=3, backoff=0.01, deadline=DEADLINE)}


def test_a_sync_read_dripped_a_byte_at_a_time_ends_at_the_deadline(
    proxy: FaultProxy, namespace: str
) -> None:
    with open_store(f"redis://{proxy.url_netloc}/0", **_options(namespace)) as store:
        session = store.session("s")
        session.append([user("x" * 60), user("y" * 60)])
        proxy.drip(DRIP)
        before = proxy.bytes_down
        with pytest.raises(BackendUnavailable, match="before the store call's deadline"):
            session.read(last=2)
        assert proxy.bytes_down - before < 200  # cut off, not waited out (~300 bytes)
        proxy.clear()
        assert [m.text[0] for m in session.read(last=2)] == ["x", "y"]  # and it recovers


def test_an_async_read_dripped_a_byte_at_a_time_ends_at_the_deadline(
    proxy: FaultProxy, namespace: str
) -> None:
    async def scenario() -> None:
        # redis.asyncio bounds a whole reply by the socket timeout: set it far
        # beyond the deadline, so that what ends the call is the deadline.
        async with await open_async_store(f"redis://{proxy.url_netloc}/0",
                                          **_options(namespace, timeout=30.0)) as store:
            session = store.session("s")
            await session.append([user("x" * 60), user("y" * 60)])
            proxy.drip(DRIP)
            with pytest.raises(BackendUnavailable, match="within the call's deadline"):
                await session.read(last=2)
            proxy.clear()
            assert len(await session.read(last=2)) == 2

    asyncio.run(scenario())


def _lose_reply_while_restarting(private_redis: RedisServer, proxy: FaultProxy) -> None:
    proxy.lose_next_reply(then=lambda: private_redis.restart(empty=True))


def test_a_retry_after_the_server_restarted_empty_raises_memory_lost(
    private_redis: RedisServer, namespace: str
) -> None:
    with FaultProxy(private_redis.host, private_redis.port) as proxy, \
            open_store(f"redis://{proxy.url_netloc}/0", namespace=namespace,
                       retry=RetryPolicy(attempts=10, backoff=0.05, deadline=10)) as store:
        session = store.session("s")
        ack = session.append([user("a"), user("b")])  # the handle now knows ledger L, v2
        _lose_reply_while_restarting(private_redis, proxy)
        with pytest.raises(MemoryLostError) as caught:
            session.append([user("c"), user("d"), user("e")])
        assert (caught.value.ledger, caught.value.found_ledger) == (ack.ledger, None)
        assert session.read().version == 0  # the retry wrote nothing onto a new ledger
        assert session.append([user("again")]).version == 1  # the caller decides to go on


def test_an_async_retry_after_the_server_restarted_empty_raises_memory_lost(
    private_redis: RedisServer, namespace: str
) -> None:
    async def scenario(proxy: FaultProxy) -> None:
        async with await open_async_store(
                f"redis://{proxy.url_netloc}/0", namespace=namespace,
                retry=RetryPolicy(attempts=10, backoff=0.05, deadline=10)) as store:
            session = store.session("s")
            ack = await session.append([user("a"), user("b")])
            _lose_reply_while_restarting(private_redis, proxy)
            with pytest.raises(MemoryLostError) as caught:
                await session.append([user("c"), user("d"), user("e")])
            assert caught.value.ledger == ack.ledger
            assert (await session.read()).version == 0

    with FaultProxy(private_redis.host, private_redis.port) as proxy:
        asyncio.run(scenario(proxy))


def test_a_retry_onto_the_same_ledger_is_still_deduplicated(
    private_redis: RedisServer, namespace: str
) -> None:
    with FaultProxy(private_redis.host, private_redis.port) as proxy, \
            open_store(f"redis://{proxy.url_netloc}/0", namespace=namespace,
                       retry=RetryPolicy(attempts=10, backoff=0.05, deadline=10)) as store:
        session = store.session("s")
        first = session.append([user("a")])
        proxy.lose_next_reply()
        ack = session.append([user("b"), user("c")])  # applied, reply lost, retried
        assert (ack.first_seq, ack.version, ack.deduplicated, ack.ledger) == (
            2, 3, True, first.ledger)


def test_a_retry_of_a_batch_stored_on_a_new_ledger_is_its_own_retry(
    private_redis: RedisServer, namespace: str
) -> None:
    """The handle saw ledger L; another pod deleted the session; the first attempt
    (not pinned) started ledger L2 with the batch and its reply was lost. The
    retry finds the batch stored: that is an Ack on L2, not a MemoryLostError
    that would make the caller send the messages again under new ids."""
    with FaultProxy(private_redis.host, private_redis.port) as proxy, \
            open_store(f"redis://{proxy.url_netloc}/0", namespace=namespace,
                       retry=RetryPolicy(attempts=10, backoff=0.05, deadline=10)) as store, \
            open_store(private_redis.url, namespace=namespace) as other_pod:
        session = store.session("s")
        first = session.append([user("a")])
        other_pod.session("s").delete()
        proxy.lose_next_reply()
        ack = session.append([user("after the delete")])
        assert ack.deduplicated and ack.ledger != first.ledger
        assert [m.text for m in session.read()] == ["after the delete"]
