"""Async single commands share one connection (redis/senders.py): every reply reaches
its own caller, and a fault on the connection fails exactly the commands owed on it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
import redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from chatledger import open_async_store, user
from chatledger._backends.redis.senders import AsyncSender
from chatledger._backends.redis.transport import ASYNC_CONNECTIONS, ASYNC_POOL
from chatledger.testing._proxy import FaultProxy
from chatledger.testing._redis_server import RedisServer

T = TypeVar("T")


def _with_sender(scenario: Callable[[AsyncSender], Awaitable[T]], host: str, port: int,
                 timeout: float = 5.0) -> T:
    async def main() -> T:
        pool = ASYNC_POOL(max_connections=4, connection_class=ASYNC_CONNECTIONS["tcp"],
                          host=host, port=port, socket_timeout=timeout)
        sender = AsyncSender(pool)
        try:
            return await scenario(sender)
        finally:
            await sender.close()
            await pool.disconnect()

    return asyncio.run(main())


async def _written(sender: AsyncSender, owed: int) -> Any:
    """The sender's line, once ``owed`` commands are queued on it and written."""
    while sender._line is None or sender._line._outgoing or len(sender._line._owed) < owed:
        await asyncio.sleep(0)
    return sender._line


def _connections_named(raw: redis.Redis, name: str) -> int:
    return sum(1 for client in raw.client_list() if client["name"] == name)


def test_calls_in_flight_share_one_connection(redis_url: str, raw: redis.Redis,
                                              namespace: str) -> None:
    async def main() -> tuple[int, list[list[str]]]:
        async with await open_async_store(redis_url, namespace=namespace,
                                          client_name="shared-line") as store:
            sessions = [store.session(f"s{n}") for n in range(50)]
            for round_ in range(3):
                await asyncio.gather(*(session.append([user(f"{session.id} {round_}")])
                                       for session in sessions))
            counted = _connections_named(raw, "shared-line")
            read = await asyncio.gather(*(session.read() for session in sessions))
            return counted, [[m.text for m in history.messages] for history in read]

    counted, texts = asyncio.run(main())
    assert counted == 1  # 150 appends, 50 at once: one connection, not 50
    assert texts == [[f"s{n} {round_}" for round_ in range(3)] for n in range(50)]


def test_each_reply_reaches_its_own_caller(redis_server: RedisServer) -> None:
    async def scenario(sender: AsyncSender) -> list[Any]:
        commands: list[tuple[Any, ...]] = []
        for n in range(300):  # every seventh an error reply, which is its command's alone
            commands.append(("GET",) if n % 7 == 0 else ("ECHO", f"reply {n}"))
        return await asyncio.gather(*(sender.send(command) for command in commands),
                                    return_exceptions=True)

    replies = _with_sender(scenario, redis_server.host, redis_server.port)
    for n, reply in enumerate(replies):
        if n % 7 == 0:
            assert isinstance(reply, ResponseError) and "wrong number" in str(reply)
        else:
            assert reply == f"reply {n}".encode()


def test_a_cancelled_call_leaves_its_reply_behind(redis_server: RedisServer,
                                                  raw: redis.Redis) -> None:
    async def scenario(sender: AsyncSender) -> tuple[Any, Any, bool]:
        await sender.send(("PING",))  # connected: what follows is written at once
        blocked = asyncio.ensure_future(sender.send(("BLPOP", "nothing-here", "1")))
        behind = asyncio.ensure_future(sender.send(("ECHO", "mine")))  # same connection, after
        line = await _written(sender, 2)  # BLPOP's reply comes in a second, ECHO's after it
        blocked.cancel()
        echoed = await behind  # BLPOP's nil was read and dropped, not handed to ECHO
        fresh = await sender.send(("ECHO", "after"))  # a new connection: the old one retired
        assert line is not None and line is not sender._line
        return echoed, fresh, line.closed

    echoed, fresh, closed = _with_sender(scenario, redis_server.host, redis_server.port)
    assert (echoed, fresh) == (b"mine", b"after")
    assert closed  # retired by the cancel, closed once nothing was owed on it


def test_a_retired_connection_closes_once_its_replies_are_read(redis_server: RedisServer,
                                                               raw: redis.Redis) -> None:
    async def scenario(sender: AsyncSender) -> tuple[Any, list[bool]]:
        await sender.send(("CLIENT", "SETNAME", "retiring"))
        owed = asyncio.ensure_future(sender.send(("BLPOP", "nothing-here", "1")))
        retired = await _written(sender, 1)
        sender.retire()  # as Sentinel's backend does when the master moves
        await sender.send(("PING",))  # on a new connection, while the old one still owes
        states = [retired.closed, _connections_named(raw, "retiring") == 1]
        reply = await owed  # still read on the old one
        await retired.wait_closed()
        states.append(retired.connection.is_connected)
        return reply, states

    reply, states = _with_sender(scenario, redis_server.host, redis_server.port)
    assert reply is None  # BLPOP timed out: its own reply, not another's
    assert states == [False, True, False]  # open while owing, closed once paid


def test_a_broken_connection_fails_every_call_owed_then_reconnects(
        redis_server: RedisServer) -> None:
    with FaultProxy(redis_server.host, redis_server.port) as proxy:
        async def scenario(sender: AsyncSender) -> tuple[list[Any], Any]:
            await sender.send(("PING",))  # connected through the proxy
            sent = proxy.bytes_up
            owed = [asyncio.ensure_future(sender.send(("BLPOP", f"k{n}", "2")))
                    for n in range(3)]
            while proxy.bytes_up == sent:  # until the commands are on their way
                await asyncio.sleep(0.01)
            proxy.reset_all()
            failed = await asyncio.gather(*owed, return_exceptions=True)
            return failed, await sender.send(("ECHO", "again"))

        failed, again = _with_sender(scenario, proxy.host, proxy.port)
    assert all(isinstance(error, RedisConnectionError) for error in failed), failed
    assert again == b"again"


def test_a_silent_server_times_out_every_call_owed(redis_server: RedisServer) -> None:
    with FaultProxy(redis_server.host, redis_server.port) as proxy:
        async def scenario(sender: AsyncSender) -> tuple[list[Any], Any]:
            await sender.send(("PING",))
            proxy.blackhole()
            failed = await asyncio.gather(*(sender.send(("ECHO", str(n))) for n in range(3)),
                                          return_exceptions=True)
            proxy.clear()
            return failed, await sender.send(("ECHO", "again"))

        failed, again = _with_sender(scenario, proxy.host, proxy.port, timeout=0.3)
    assert all(isinstance(error, RedisTimeoutError) for error in failed), failed
    assert again == b"again"


def test_an_idle_connection_the_server_closed_is_renewed(redis_server: RedisServer,
                                                         raw: redis.Redis) -> None:
    async def scenario(sender: AsyncSender) -> list[Any]:
        replies = [await sender.send(("CLIENT", "SETNAME", "to-kill"))]
        raw.client_kill_filter(_type="normal", skipme=True)
        for _ in range(20):  # until the client's socket has seen the close
            if sender._line is not None and sender._line.connection._reader.at_eof():
                break
            await asyncio.sleep(0.01)
        replies.append(await sender.send(("ECHO", "renewed")))  # no retry needed
        return replies

    assert _with_sender(scenario, redis_server.host, redis_server.port) == [b"OK", b"renewed"]


def test_closing_fails_the_calls_owed(redis_server: RedisServer) -> None:
    async def scenario(sender: AsyncSender) -> BaseException | None:
        await sender.send(("PING",))  # connected: the BLPOP is written at once
        owed = asyncio.ensure_future(sender.send(("BLPOP", "nothing-here", "5")))
        await asyncio.sleep(0.05)
        await sender.close()
        with pytest.raises(RedisConnectionError, match="closed") as caught:
            await owed
        return caught.value

    assert _with_sender(scenario, redis_server.host, redis_server.port) is not None


def test_a_retire_during_a_connect_sends_later_commands_elsewhere(
        redis_server: RedisServer) -> None:
    # Sentinel's backend retires the line when the master moves; a connection being
    # made at that moment may have been told the old master's address.
    async def scenario(sender: AsyncSender) -> tuple[Any, Any, bool]:
        made: list[Any] = []
        make = sender._pool.make_connection

        def recorded() -> Any:
            made.append(make())
            return made[-1]

        sender._pool.make_connection = recorded
        first = asyncio.ensure_future(sender.send(("ECHO", "first")))
        while not sender._opening.locked():  # connecting
            await asyncio.sleep(0)
        sender.retire()
        begun = made[:]  # the connections begun before the retire
        echoed = await first
        after = await sender.send(("ECHO", "after"))
        assert sender._line is not None
        return echoed, after, sender._line.connection in begun

    echoed, after, on_old = _with_sender(scenario, redis_server.host, redis_server.port)
    assert (echoed, after) == (b"first", b"after")
    assert not on_old  # commands after the retire go to a connection made after it


def test_a_close_during_a_connect_fails_the_call_and_keeps_no_connection(
        redis_server: RedisServer) -> None:
    async def scenario(sender: AsyncSender) -> tuple[BaseException | None, Any, list[Any]]:
        first = asyncio.ensure_future(sender.send(("ECHO", "too late")))
        while not sender._opening.locked():  # connecting
            await asyncio.sleep(0)
        await sender.close()
        failed: BaseException | None = None
        try:
            await first
        except RedisConnectionError as exc:
            failed = exc
        return failed, sender._line, sender._draining

    failed, line, draining = _with_sender(scenario, redis_server.host, redis_server.port)
    assert isinstance(failed, RedisConnectionError) and "closed" in str(failed)
    assert line is None and draining == []  # nothing left open after close()


def test_a_call_waiting_to_connect_is_not_handed_a_line_that_broke_meanwhile(
        redis_server: RedisServer) -> None:
    # Two calls find no line; the first connects while the second waits its turn, and
    # the new line breaks before that turn comes: the second connects again.
    with FaultProxy(redis_server.host, redis_server.port) as proxy:
        async def scenario(sender: AsyncSender) -> tuple[BaseException | None, Any, int]:
            opening = sender._opening
            await opening.acquire()  # the calls queue up in a known order behind it
            first = asyncio.ensure_future(sender.send(("BLPOP", "nothing-here", "5")))
            while not opening._waiters:
                await asyncio.sleep(0)
            opening.release()
            second = asyncio.ensure_future(sender.send(("ECHO", "second")))
            await opening.acquire()  # after the first call's connect, before the second's
            try:
                await _written(sender, 1)
                while proxy.bytes_up == 0:  # the BLPOP is on its way
                    await asyncio.sleep(0.01)
                proxy.reset_all()
                failed = (await asyncio.wait_for(asyncio.gather(first, return_exceptions=True),
                                                 5))[0]
            finally:
                opening.release()
            echoed = await asyncio.wait_for(second, 5)
            return failed, echoed, proxy.connections_accepted

        failed, echoed, connections = _with_sender(scenario, proxy.host, proxy.port)
    assert isinstance(failed, RedisConnectionError), failed  # owed when it broke: failed
    assert echoed == b"second"  # not the broken line's "closed before the command was sent"
    assert connections == 2


def test_replies_stay_with_their_callers_whenever_calls_are_cancelled(
        redis_server: RedisServer, raw: redis.Redis) -> None:
    # Every third call cancelled: while its command waits to be written, once it is
    # written (its reply held back behind a BLPOP), and while it waits for a connect
    # (each cancel of a command owed retires its line: the next phase connects).
    # Every other call gets its own reply, and so do the calls after.
    calls: list[tuple[Any, asyncio.Task[Any]]] = []

    async def scenario(sender: AsyncSender) -> None:
        async def sent(args: tuple[Any, ...]) -> Any:  # awaited at once, as the store does
            return await sender.send(args)

        def call(args: tuple[Any, ...]) -> asyncio.Task[Any]:
            calls.append((args, asyncio.ensure_future(sent(args))))
            return calls[-1][1]

        def phase(name: str) -> list[asyncio.Task[Any]]:
            # An error reply every fifth: its command's own, never a neighbour's.
            return [call(("GET",) if n % 5 == 0 else ("ECHO", f"{name} {n}"))
                    for n in range(30)]

        await sender.send(("PING",))  # connected
        blocked = [asyncio.ensure_future(sent(("BLPOP", "release-1", "5")))]
        queued = phase("queued")
        await asyncio.sleep(0)  # each has queued its command; the line writes them next
        line = sender._line
        assert line is not None and len(line._outgoing) == 31  # none written yet
        _cancel_every_third(queued)
        blocked.append(asyncio.ensure_future(sent(("BLPOP", "release-2", "5"))))
        written = phase("written")  # on a new line: the cancels retired the first
        await _written(sender, 31)
        assert sender._line is not line
        _cancel_every_third(written)
        connecting = phase("connecting")
        while not sender._opening.locked():  # retired again: connecting
            await asyncio.sleep(0)
        _cancel_every_third(connecting)
        raw.lpush("release-1", "x")  # each BLPOP answers, and every reply behind it follows
        raw.lpush("release-2", "x")
        await asyncio.wait_for(asyncio.gather(*(task for _, task in calls), *blocked,
                                              return_exceptions=True), 5)
        assert [task.result() for task in blocked] == [[b"release-1", b"x"],
                                                       [b"release-2", b"x"]]
        after = await asyncio.gather(*(sender.send(("ECHO", f"after {n}")) for n in range(30)))
        assert after == [f"after {n}".encode() for n in range(30)]

    _with_sender(scenario, redis_server.host, redis_server.port)
    assert len(calls) == 90
    for index, (args, task) in enumerate(calls):
        if index % 30 % 3 == 0:
            assert task.cancelled(), (index, args)
        elif args == ("GET",):
            assert isinstance(task.exception(), ResponseError), (index, args)
        else:
            assert task.result() == args[1].encode(), (index, args, task.result())


def _cancel_every_third(tasks: list[asyncio.Task[Any]]) -> None:
    for task in tasks[::3]:
        task.cancel()
