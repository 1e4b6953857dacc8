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
import threading
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
    on that loop (not by the store's open, whose loop may be a throwaway one).

    One store is meant for one loop at a time. Two threads' loops calling it at
    once still get answers (each call a pool of its own loop, the other retired),
    never a pool opened on one loop and recorded for another: a pool is opened on
    its loop before it is swapped in, under a lock held without suspending."""

    def __init__(self, make: Callable[[], _AsyncPool]) -> None:
        self._make = make
        self.pool = make()
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop it runs on
        self._closed = False
        self._swap = threading.Lock()

    async def open(self) -> None:
        """Nothing to do until a call comes: its loop gets the pool."""

    async def here(self) -> _AsyncPool:
        loop = asyncio.get_running_loop()
        if loop is self._loop or self._closed:
            return self.pool  # closed: its getconn raises PoolClosed, as the store is
        new = self._make()
        await new.open(wait=False)  # on this loop; it does not suspend (its lock is free)
        with self._swap:  # another thread's loop may be swapping too
            spare = self._closed or self._loop is loop
            if not spare:
                old, old_loop = self.pool, self._loop
                self.pool, self._loop = new, loop
        if spare:  # closed meanwhile, from another thread
            await new.close()
            return self.pool
        if old_loop is not None:
            _retire_soon(old, old_loop)
        return new

    async def close(self) -> None:
        with self._swap:
            self._closed = True
            pool, loop = self.pool, self._loop
        if loop is None:
            return
        if loop is asyncio.get_running_loop():
            await pool.close()
        elif loop.is_running():  # closed on its own loop; this call waits a while for it
            closing = asyncio.run_coroutine_threadsafe(pool.close(), loop)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.wrap_future(closing), _CLOSE_ELSEWHERE)
        else:
            _drop(pool)


def _retire_soon(pool: AsyncConnectionPool, loop: asyncio.AbstractEventLoop) -> None:
    """Close a pool a call left behind: on its own loop if that still runs (not
    waited for: the caller's call goes on), else at once (nothing of it can run)."""
    if loop.is_running():
        asyncio.run_coroutine_threadsafe(pool.close(), loop)
    else:
        _drop(pool)


def _drop(pool: AsyncConnectionPool) -> None:
    """A pool whose loop ended or stopped: its workers ended with it; its idle
    connections are closed here, and psycopg_pool's own flag refuses it from now on."""
    pool._closed = True
    idle = getattr(pool, "_pool", None)
    for connection in list(idle or ()):
        connection.pgconn.finish()
    if idle is not None:
        idle.clear()
