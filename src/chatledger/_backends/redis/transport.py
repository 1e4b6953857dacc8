"""The connection classes of both Redis backends.

Async connections are redis-py's own: the store cancels an async attempt at
its call's deadline. Sync connections add one thing: a reply is read under
the watchdog (:mod:`chatledger._watchdog`), which shuts the socket down if the
store call's deadline passes mid-read, since a socket timeout only bounds each
``recv`` and a server dripping its reply would hold the call forever.
"""

from __future__ import annotations

import socket
from contextlib import suppress
from typing import Any

from redis import connection as sync_connection
from redis import sentinel as sync_sentinel
from redis.asyncio import connection as async_connection
from redis.asyncio import sentinel as async_sentinel
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..._watchdog import guard

__all__ = ["ASYNC_CONNECTIONS", "ASYNC_SENTINEL_CONNECTION", "CONNECTIONS", "SENTINEL_CONNECTION"]


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


CONNECTIONS: dict[str, type[Any]] = {
    "tcp": _Connection, "tls": _SSLConnection, "unix": _UnixConnection,
}
ASYNC_CONNECTIONS: dict[str, type[Any]] = {
    "tcp": async_connection.Connection,
    "tls": async_connection.SSLConnection,
    "unix": async_connection.UnixDomainSocketConnection,
}
SENTINEL_CONNECTION: type[Any] = _SentinelConnection
ASYNC_SENTINEL_CONNECTION: type[Any] = async_sentinel.SentinelManagedConnection
