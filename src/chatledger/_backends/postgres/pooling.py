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
from collections.abc import Callable
from typing import Generic, TypeVar

from psycopg_pool import AsyncConnectionPool, ConnectionPool

__all__ = ["AsyncPooling", "Pooling"]

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
    """The pool of the running event loop, made when a call first runs on a loop."""

    def __init__(self, make: Callable[[], _AsyncPool]) -> None:
        self._make = make
        self.pool = make()
        self._loop: asyncio.AbstractEventLoop | None = None  # the loop it runs on

    async def open(self) -> None:
        self._loop = asyncio.get_running_loop()
        await self.pool.open(wait=False)

    async def here(self) -> _AsyncPool:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            # Set before the open, which does not suspend (psycopg_pool's lock is not
            # contended on a new pool): a second call meanwhile finds this pool.
            self._loop, self.pool = loop, self._make()
            await self.pool.open(wait=False)
        return self.pool

    async def close(self) -> None:
        if self._loop is None or self._loop is asyncio.get_running_loop() \
                or not self._loop.is_closed():
            await self.pool.close()
        # else its loop is gone, and its workers with it: nothing is left to wait for
