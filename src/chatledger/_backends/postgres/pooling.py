"""The pool a PostgreSQL backend's calls take their connections from.

Sync: one pool. Async: one pool per event loop, the last one used. psycopg_pool's
workers are tasks of the loop that opened the pool and end with it, so a store
opened in one ``asyncio.run`` and used in the next (a pytest fixture, a notebook's
cells, a script's steps) would wait for connections no worker makes, and time
out as if the server were slow. A call from another loop gets a pool of its own;
the old pool is left to its loop: closing it from this one would wait on tasks
this loop does not run.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Generic, TypeVar

from psycopg_pool import AsyncConnectionPool, ConnectionPool

__all__ = ["AsyncPooling", "Pooling"]

_CLOSE_ELSEWHERE = 5.0  # seconds to wait for a pool to close on the loop it runs on

_Pool = TypeVar("_Pool", bound=ConnectionPool)
_AsyncPool = TypeVar("_AsyncPool", bound=AsyncConnectionPool)


class Pooling(Generic[_Pool]):
    """One pool, opened once."""

    def __init__(self, make: Callable[[], _Pool]) -> None:
        self.pool = make()

    def open(self) -> None:
        self.pool.open(wait=False)

    def here(self) -> _Pool:
        return self.pool

    def close(self) -> None:
        self.pool.close()


class AsyncPooling(Generic[_AsyncPool]):
    """The pool of the event loop the store is used from, opened by the first call
    on that loop (not by the store's open, whose loop may be a throwaway one)."""

    def __init__(self, make: Callable[[], _AsyncPool]) -> None:
        self._make = make
        self.pool = make()
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop it runs on
        self._closed = False

    async def open(self) -> None:
        """Nothing to do until a call comes: its loop gets the pool."""

    async def here(self) -> _AsyncPool:
        loop = asyncio.get_running_loop()
        if loop is not self._loop and not self._closed:
            # Set before the open, which does not suspend (psycopg_pool's lock is not
            # contended on a new pool): a second call meanwhile finds this pool.
            old, old_loop = self.pool, self._loop
            self._loop = loop
            if old_loop is not None:
                self.pool = self._make()
                await _retire(old, old_loop)
            await self.pool.open(wait=False)
        return self.pool  # closed: its getconn raises PoolClosed, as the store is

    async def close(self) -> None:
        self._closed = True
        if self._loop is not None:
            await _retire(self.pool, self._loop)


async def _retire(pool: AsyncConnectionPool, loop: asyncio.AbstractEventLoop) -> None:
    """Close ``pool``, which runs on ``loop``: there if that is the running loop;
    on it, from here, if it runs elsewhere; and if it has ended, with its workers,
    by closing the connections it held idle (nothing of it can run any more)."""
    if loop is asyncio.get_running_loop():
        await pool.close()
    elif loop.is_running():
        closing = asyncio.run_coroutine_threadsafe(pool.close(), loop)
        with contextlib.suppress(TimeoutError):  # cleanup: the caller's call goes on
            await asyncio.wait_for(asyncio.wrap_future(closing), _CLOSE_ELSEWHERE)
    else:  # ended, or stopped: nothing of the pool runs any more
        pool._closed = True  # psycopg_pool's own flag: its getconn refuses from now on
        idle = getattr(pool, "_pool", None)
        for connection in list(idle or ()):
            connection.pgconn.finish()
        if idle is not None:
            idle.clear()
