"""The connection classes of both Redis backends.

Async connections are redis-py's own but for how a write is bounded (a
timer, not a task: :class:`_TimedWrites`); the store cancels an async attempt
at its call's deadline. Sync connections add one thing: a reply is read under
the watchdog (:mod:`chatledger._watchdog`), which shuts the socket down if the
store call's deadline passes mid-read, since a socket timeout only bounds each
``recv`` and a server dripping its reply would hold the call forever.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from contextlib import suppress
from typing import Any

from redis import connection as sync_connection
from redis import sentinel as sync_sentinel
from redis.asyncio import connection as async_connection
from redis.asyncio import sentinel as async_sentinel
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..._watchdog import guard

__all__ = ["ASYNC_CONNECTIONS", "ASYNC_POOL", "ASYNC_SENTINEL_CONNECTION", "CONNECTIONS", "POOL",
           "SENTINEL_CONNECTION", "packed", "packed_bytes", "ready"]

try:
    import hiredis
except ImportError:  # pragma: no cover -- redis[hiredis] is the extra's requirement
    hiredis = None  # type: ignore[assignment]


def packed(connection: Any, args: tuple[Any, ...]) -> list[bytes]:
    """A command in the Redis protocol, for ``send_packed_command``: a list of
    chunks, which both drivers take as it is (the sync one iterates a bare
    ``bytes``): :func:`packed_bytes`, in a list."""
    return [packed_bytes(connection, args)]


def packed_bytes(connection: Any, args: tuple[Any, ...]) -> bytes:
    """A command in the Redis protocol as one ``bytes``: what a shared connection
    queues per command (no list, which the collector would walk while it waits).

    By hiredis where it is installed: redis.asyncio packs every command in
    Python, argument by argument, which cost an async script call more client
    work than anything but decoding the reply (the sync driver packs with
    hiredis already). Arguments are ``bytes``, ``str`` and ``int`` only (the
    calls make floats text), which both pack alike.
    """
    if hiredis is None:  # pragma: no cover
        return b"".join(connection.pack_command(*args))
    command: bytes = hiredis.pack_command(args)
    return command


class _BoundedReads:
    """Mixed into a sync connection: each reply is read within the call's deadline."""

    _cut_off = False

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        self._cut_off = False
        try:
            with guard(self._abort):
                return super().read_response(*args, **kwargs)  # type: ignore[misc]
        except (RedisConnectionError, OSError) as exc:
            if self._cut_off:  # say why the connection broke: the deadline, not the server
                raise RedisTimeoutError("no complete reply before the store call's deadline "
                                        "(retry.deadline)") from exc
            raise

    def _abort(self) -> None:
        self._cut_off = True
        sock: socket.socket | None = getattr(self, "_sock", None)
        if sock is not None:
            with suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)  # the blocked recv returns: the read fails


class _Connection(_BoundedReads, sync_connection.Connection):
    pass


class _SSLConnection(_BoundedReads, sync_connection.SSLConnection):
    pass


class _UnixConnection(_BoundedReads, sync_connection.UnixDomainSocketConnection):
    pass


class _SentinelConnection(_BoundedReads, sync_sentinel.SentinelManagedConnection):
    pass


class _TimedWrites:
    """Mixed into an async connection: a write is bounded by the socket timeout
    with a timer, where redis.asyncio bounds it with ``asyncio.wait_for``.

    Before Python 3.12, ``wait_for`` runs the write in a task of its own: one
    more task and one more turn of the event loop for every command, the
    largest share of an async call's client work after decoding the reply
    (docs/development.md, Benchmarks). The bound is the same: a write that
    cannot finish within ``socket_timeout`` drops the connection and raises
    redis-py's TimeoutError, which the store retries. A write that cannot wait
    at all (:meth:`_cannot_block`), nearly every one, arms no timer.
    """

    socket_timeout: float | None
    health_check_interval: float
    _writer: asyncio.StreamWriter | None

    if sys.version_info >= (3, 11):

        async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            timeout = self.socket_timeout
            if not timeout:
                await super().send_packed_command(command, check_health)  # type: ignore[misc]
                return
            # Unset while the driver writes, so that it writes inline: the connection
            # serves one command at a time, nothing else reads it meanwhile.
            self.socket_timeout = None
            writer = self._writer
            try:
                if self._cannot_block(command):
                    await super().send_packed_command(command, check_health)  # type: ignore[misc]
                else:
                    async with asyncio.timeout(timeout):
                        await super().send_packed_command(  # type: ignore[misc]
                            command, check_health)
            except TimeoutError as exc:
                # The driver closed the connection when cancelled, gracefully: the
                # transport would go on sending the rest of the command, and a server
                # that comes back would run what the caller was told had failed.
                if writer is not None:
                    writer.transport.abort()
                raise RedisTimeoutError("Timeout writing to socket") from exc
            finally:
                self.socket_timeout = timeout

        def _cannot_block(self, command: Any) -> bool:
            """Whether writing ``command`` returns without waiting, so needs no timer.

            A write waits only when it leaves the transport's buffer above its
            high-water mark (the socket took less than that); below it, the
            driver's ``drain`` returns at once. Nearly every command is far
            smaller than the mark (64 KiB by default). A connection yet to
            connect, or with a health check to make (a PING, and its reply to
            read), goes the timed way.
            """
            writer = self._writer
            if writer is None or self.health_check_interval or not isinstance(command, list):
                return False
            transport = writer.transport
            size = sum(map(len, command)) + transport.get_write_buffer_size()
            return bool(size <= transport.get_write_buffer_limits()[1])


class _AsyncConnection(_TimedWrites, async_connection.Connection):
    pass


class _AsyncSSLConnection(_TimedWrites, async_connection.SSLConnection):
    pass


class _AsyncUnixConnection(_TimedWrites, async_connection.UnixDomainSocketConnection):
    pass


class _AsyncSentinelConnection(_TimedWrites, async_sentinel.SentinelManagedConnection):
    pass


class _AsyncPool(async_connection.BlockingConnectionPool):
    """redis.asyncio's blocking pool, with a short way for a free connection.

    For every connection it hands out and takes back, free or not, the
    driver's pool takes its condition's lock, starts a timer for ``timeout``
    and awaits its metrics and event hooks: about a sixth of an async script
    call's client work. Where a connection is free, this pool hands it out
    directly, and takes it back directly where no caller waits for one; a
    caller that must wait goes the driver's way (timed, woken by a release).
    The driver's own metrics (redis-py's OpenTelemetry hooks) do not see
    these; chatledger's telemetry is per store call.
    """

    async def get_connection(self, command_name: Any = None, *keys: Any, **options: Any) -> Any:
        if not self._available_connections or self._in_maintenance:
            return await super().get_connection()  # type: ignore[no-untyped-call]
        connection = self._available_connections.pop()
        self._in_use_connections.add(connection)
        try:
            if not await ready(connection):
                await self.ensure_connection(connection)  # connected, no stray reply pending
        except BaseException:
            await self.release(connection)
            raise
        return connection

    async def release(self, connection: Any) -> None:
        waiting = getattr(self._condition, "_waiters", True)  # asyncio's; unknown: assume some
        if waiting or self._in_maintenance:
            await super().release(connection)  # wakes a waiter
            return
        self._in_use_connections.remove(connection)
        if connection.should_reconnect():
            await connection.disconnect()
        self._available_connections.append(connection)


async def ready(connection: Any) -> bool:
    """Whether a pooled connection is connected with nothing left to read: what
    the driver's ``ensure_connection`` checks, without its connect (a no-op on
    a connected one, run inside a retry loop: three coroutines and a lambda per
    command). Otherwise, or if the check fails, the driver's way takes over."""
    try:
        return bool(connection.is_connected and not await connection.can_read())
    except (RedisConnectionError, RedisTimeoutError, OSError):  # it disconnected itself
        return False


CONNECTIONS: dict[str, type[Any]] = {
    "tcp": _Connection, "tls": _SSLConnection, "unix": _UnixConnection,
}
ASYNC_CONNECTIONS: dict[str, type[Any]] = {
    "tcp": _AsyncConnection, "tls": _AsyncSSLConnection, "unix": _AsyncUnixConnection,
}
SENTINEL_CONNECTION: type[Any] = _SentinelConnection
POOL: type[Any] = sync_connection.BlockingConnectionPool
ASYNC_POOL: type[Any] = _AsyncPool
ASYNC_SENTINEL_CONNECTION: type[Any] = _AsyncSentinelConnection
