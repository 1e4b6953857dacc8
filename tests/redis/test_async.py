"""The async backend does what the sync one does, call for call, fault for fault."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
import redis
import redis.asyncio

from chatledger import (
    AsyncStore,
    BackendError,
    BackendUnavailable,
    RetryPolicy,
    assistant,
    open_async_store,
    user,
)
from chatledger._backends.redis import AsyncRedisBackend, scripts
from chatledger._backends.redis.transport import ASYNC_CONNECTIONS
from chatledger.testing._proxy import FaultProxy
from chatledger.testing._redis_server import RedisServer
from tests.conftest import resumed_after
from tests.redis.conftest import retrying

T = TypeVar("T")


def _run(scenario: Callable[[AsyncStore], Awaitable[T]], url: str, **options: Any) -> T:
    async def main() -> T:
        options.setdefault("retry", RetryPolicy.none())
        async with await open_async_store(url, **options) as store:
            assert isinstance(store._backend, AsyncRedisBackend)
            return await scenario(store)

    return asyncio.run(main())


def test_async_reloads_a_flushed_script(redis_url: str, raw: redis.Redis,
                                        namespace: str) -> None:
    async def scenario(store: AsyncStore) -> int:
        await store.session("s").append([user("a")])
        raw.script_flush()
        await store.session("s").append([user("b")])
        raw.script_flush()
        return await store.purge()

    assert _run(scenario, redis_url, namespace=namespace) == 1
    assert raw.script_exists(scripts.DELETE.sha) == [True]


def test_async_pages_through_many_sessions(redis_url: str, namespace: str) -> None:
    async def scenario(store: AsyncStore) -> tuple[int, int]:
        for n in range(600):
            await store.session(f"s{n}").append([user("x")])
        listed = [sid async for sid in store.sessions()]
        assert len(set(listed)) == len(listed)
        return len(listed), await store.purge()

    assert _run(scenario, redis_url, namespace=namespace) == (600, 600)


paused = resumed_after("private_redis")


def test_async_a_paused_server_is_unavailable_within_the_timeout(paused: RedisServer) -> None:
    async def scenario(store: AsyncStore) -> float:
        await store.session("s").append([user("a")])
        paused.pause()
        started = time.monotonic()
        with pytest.raises(BackendUnavailable):
            await store.session("s").read()
        return time.monotonic() - started

    assert _run(scenario, paused.url, timeout=0.4) < 0.4 + 4.0  # no hang; slack for load


def test_async_a_lost_reply_is_retried_and_stored_once(redis_server: RedisServer,
                                                       namespace: str) -> None:
    with FaultProxy(redis_server.host, redis_server.port) as proxy:
        async def scenario(store: AsyncStore) -> list[str]:
            session = store.session("s")
            await session.append([user("warm up")])
            proxy.lose_next_reply()
            ack = await session.append([user("q"), assistant("a")])
            assert (ack.first_seq, ack.deduplicated) == (2, True)
            return [m.text for m in await session.read()]

        texts = _run(scenario, f"redis://{proxy.url_netloc}/0", namespace=namespace,
                     retry=retrying())
        assert proxy.faults_injected == 1
    assert texts == ["warm up", "q", "a"]


def test_async_a_refused_connection_is_unavailable(redis_server: RedisServer) -> None:
    with FaultProxy(redis_server.host, redis_server.port) as proxy:
        proxy.refuse()

        async def scenario(store: AsyncStore) -> None:
            with pytest.raises(BackendUnavailable):
                await store.session("s").read()
            with pytest.raises(BackendUnavailable):
                await store.purge()

        _run(scenario, f"redis://{proxy.url_netloc}/0")


def test_a_closed_async_store_refuses_to_work(redis_url: str, namespace: str) -> None:
    async def scenario() -> None:
        store = await open_async_store(redis_url, namespace=namespace)
        await store.session("s").append([user("a")])
        assert await store.purge(prefix="nobody") == 0
        await store.close()
        with pytest.raises(BackendError, match="is closed"):
            await store.session("s").read()
        with pytest.raises(BackendError, match="is closed"):
            await store.purge()

    asyncio.run(scenario())


def test_async_a_write_the_server_does_not_take_is_cut_off_by_the_timeout(
        paused: RedisServer) -> None:
    # 40 MB fill the loopback socket's buffers: the write waits for a frozen server.
    big = user("x" * (40 * 1024 * 1024))

    async def scenario(store: AsyncStore) -> tuple[BaseException | None, float]:
        await store.session("s").append([user("a")])
        paused.pause()
        started = time.monotonic()
        with pytest.raises(BackendUnavailable) as caught:
            await store.session("s").append([big])
        waited = time.monotonic() - started
        paused.resume()
        # What the socket had not taken was dropped with the connection, never sent late.
        async with await open_async_store(paused.url, timeout=10.0) as patient:
            assert [m.text for m in (await patient.session("s").read()).messages] == ["a"]
        return caught.value.__cause__, waited

    cause, waited = _run(scenario, paused.url, timeout=0.4, max_message_bytes=64 * 1024 * 1024)
    assert isinstance(cause, redis.exceptions.TimeoutError)  # the connection's bound
    assert waited < 0.4 + 4.0  # no hang; slack for load


def test_async_callers_beyond_the_pool_wait_for_a_connection(redis_url: str,
                                                             namespace: str) -> None:
    async def scenario(store: AsyncStore) -> tuple[list[int], int]:
        sessions = [store.session(f"s{n}") for n in range(40)]
        acks = await asyncio.gather(*(s.append([user("q"), assistant("a")]) for s in sessions))
        reads = await asyncio.gather(*(s.read(last=20) for s in sessions))
        pool = store._backend.pool  # type: ignore[attr-defined]
        opened = len(pool._available_connections) + len(pool._in_use_connections)
        return [ack.version for ack in acks] + [h.version for h in reads], opened

    versions, opened = _run(scenario, redis_url, namespace=namespace, max_connections=2)
    assert versions == [2] * 80
    assert opened <= 2


def test_async_a_pooled_connection_found_closed_is_renewed(redis_url: str, raw: redis.Redis,
                                                          namespace: str) -> None:
    # Listing sessions (SCAN) takes a pooled connection; single script calls share another.
    async def scenario(store: AsyncStore) -> list[list[str]]:
        await store.session("s").append([user("a")])
        pool = store._backend.pool  # type: ignore[attr-defined]
        listed = [[name async for name in store.sessions()]]
        for close in ("the server", "the reader"):
            (connection,) = pool._available_connections
            if close == "the server":
                raw.client_kill_filter(_id=_client_id(raw, connection))  # the pooled one
            else:  # the socket open, its reader closed: the check itself fails
                connection._parser.on_disconnect()
            listed.append([name async for name in store.sessions()])
        return listed

    assert _run(scenario, redis_url, namespace=namespace, max_connections=1,
                retry=retrying()) == [["s"], ["s"], ["s"]]


def _client_id(raw: redis.Redis, connection: Any) -> int:
    """The server's id of a client connection, found by its local port."""
    port = connection._writer.get_extra_info("sockname")[1]
    (found,) = [client for client in raw.client_list() if client["addr"].endswith(f":{port}")]
    return int(found["id"])


def test_async_writes_not_sized_or_health_checked_first_go_the_timed_way(
        redis_server: RedisServer) -> None:
    async def scenario() -> list[Any]:
        replies = []
        for command, interval in ((b"*1\r\n$4\r\nPING\r\n", 0), ([b"*1\r\n$4\r\nPING\r\n"], 30)):
            connection = ASYNC_CONNECTIONS["tcp"](
                host=redis_server.host, port=redis_server.port, socket_timeout=5,
                health_check_interval=interval)
            for _ in range(2):  # the first write connects
                await connection.send_packed_command(command)
                replies.append(await connection.read_response())
            await connection.disconnect()
        return replies

    assert asyncio.run(scenario()) == [b"PONG"] * 4


def test_async_a_write_cut_off_by_the_timeout_is_never_sent_later(paused: RedisServer) -> None:
    # A pooled connection (pipelines, WAIT): the driver closes it gracefully when its
    # write times out, and the transport would send the rest once the server came back.
    async def scenario() -> int:
        connection = ASYNC_CONNECTIONS["tcp"](host=paused.host, port=paused.port,
                                              socket_timeout=0.3)
        await connection.send_command("CLIENT", "ID")
        client_id = int(await connection.read_response())
        paused.pause()
        try:
            with pytest.raises(redis.exceptions.TimeoutError):
                await connection.send_command("SET", "late", "x" * (40 * 1024 * 1024))
        finally:
            paused.resume()
        async with redis.asyncio.Redis(host=paused.host, port=paused.port) as raw:
            # The loop runs on (a transport left to send would send now) until the
            # server has read what reached it and seen the connection end.
            deadline = time.monotonic() + 20
            while any(int(client["id"]) == client_id for client in await raw.client_list()):
                assert time.monotonic() < deadline, "the server still holds the connection"
                await asyncio.sleep(0.05)
            return int(await raw.exists("late"))

    assert asyncio.run(scenario()) == 0


@pytest.mark.parametrize("cancelled", ["read", "append"])
def test_async_a_call_cancelled_mid_reply_leaves_no_reply_for_the_next_one(
        redis_server: RedisServer, namespace: str, cancelled: str) -> None:
    """A caller's task cancelled after its command reached the server, before the reply
    came back (a deadline, a client gone): that reply still comes on the connection. If
    the next call on it took the cancelled call's reply as its own, it would read another
    session's messages."""

    async def scenario(proxy: FaultProxy, store: AsyncStore) -> list[list[str]]:
        mine, other = store.session("mine"), store.session("other")
        await mine.append([user("mine")])
        await other.append([user("other")])
        proxy.latency(0.2)  # the reply takes a while: time to cancel the call
        sent = proxy.bytes_up
        call = other.read() if cancelled == "read" else other.append([user("more")])
        task = asyncio.ensure_future(call)
        while proxy.bytes_up == sent and not task.done():  # until the server has it
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        proxy.clear()  # the cancelled call's reply still arrives, on its connection
        return [[m.text for m in (await session.read()).messages]
                for session in (mine, other, mine)]

    async def main(proxy: FaultProxy) -> list[list[str]]:
        async with await open_async_store(f"redis://{proxy.url_netloc}/0", namespace=namespace,
                                          max_connections=1, retry=retrying()) as store:
            return await scenario(proxy, store)

    with FaultProxy(redis_server.host, redis_server.port) as proxy:
        texts = asyncio.run(main(proxy))
    other = ["other"] if cancelled == "read" else ["other", "more"]
    assert texts == [["mine"], other, ["mine"]]
