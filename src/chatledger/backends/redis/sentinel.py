"""``redis+sentinel://``: Redis behind Sentinel, following the master through failovers.

The same scripts and calls as :mod:`.sync` and :mod:`.aio`; only the pool
differs: each new connection asks the sentinels where the master is now. During
a failover the sentinels know no master, or the old master answers READONLY as
it is demoted: both are BackendUnavailable, which the store retries (with the
same ids, so an append whose reply was lost in the switch is not doubled).
Acknowledged writes that had not reached the promoted replica are lost by
Redis itself in a failover; ``wait_replicas=1`` makes an append wait for one.

A pooled connection is not asked again where the master is: after a failover,
an old master that comes back still believing it is master would take writes
that the sentinels then erase as they demote it. So at most every
``MASTER_CHECK`` seconds a call first asks the sentinels, and connections to a
former master are dropped. The window left (under a second) is closed by
``wait_replicas=1`` or the servers' own ``min-replicas-to-write``.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from redis.asyncio.retry import Retry as AsyncRetry
from redis.asyncio.sentinel import Sentinel as AsyncSentinel
from redis.asyncio.sentinel import SentinelConnectionPool as AsyncSentinelConnectionPool
from redis.backoff import NoBackoff
from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelConnectionPool

from ...options import StoreOptions
from ...url import StoreURL
from .aio import AsyncRedisBackend
from .config import ConnectionSettings, SentinelSettings, sentinel_settings
from .errors import translated
from .sync import RedisBackend

__all__ = ["MASTER_CHECK", "AsyncSentinelBackend", "SentinelBackend"]

MASTER_CHECK = 0.5  # seconds between two questions to the sentinels from one store


class _MasterWatch:
    """When to ask the sentinels again where the master is (no I/O)."""

    def __init__(self) -> None:
        self._checked = 0.0

    @property
    def due(self) -> bool:
        return time.monotonic() - self._checked > MASTER_CHECK

    def checked(self) -> None:
        self._checked = time.monotonic()


def _arguments(settings: SentinelSettings, retry: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Keyword arguments for the sentinel manager, and for the master's pool."""
    manager = {"sentinel_kwargs": {**settings.sentinel, "retry": retry}}
    pool = {"max_connections": settings.master.max_connections, "retry": retry,
            **settings.master.connection}
    return manager, pool


class SentinelBackend(RedisBackend):
    """The sync Redis backend with a pool that follows the master."""

    schemes: ClassVar[tuple[str, ...]] = ("redis+sentinel",)

    def _open_pool(
        self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]
    ) -> ConnectionSettings:
        settings = sentinel_settings(url, options, extra)
        manager, pool = _arguments(settings, Retry(NoBackoff(), 0))
        self.watch = _MasterWatch()
        self.sentinel = Sentinel(settings.sentinels, **manager)  # type: ignore[no-untyped-call]
        self.pool = self._master_pool = SentinelConnectionPool(  # type: ignore[no-untyped-call]
            settings.service, self.sentinel, **pool)
        return settings.master

    def close(self) -> None:
        super().close()
        for client in self.sentinel.sentinels:
            client.close()

    def _before_call(self) -> None:
        super()._before_call()
        if self.watch.due:
            with translated(self._where):
                self._master_pool.get_master_address()  # type: ignore[no-untyped-call]
            self.watch.checked()


class AsyncSentinelBackend(AsyncRedisBackend):
    """The async Redis backend with a pool that follows the master."""

    schemes: ClassVar[tuple[str, ...]] = ("redis+sentinel",)

    def _open_pool(
        self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]
    ) -> ConnectionSettings:
        settings = sentinel_settings(url, options, extra)
        manager, pool = _arguments(settings, AsyncRetry(NoBackoff(), 0))
        self.watch = _MasterWatch()
        self.sentinel = AsyncSentinel(settings.sentinels, **manager)  # type: ignore[no-untyped-call]
        self.pool = self._master_pool = AsyncSentinelConnectionPool(  # type: ignore[no-untyped-call]
            settings.service, self.sentinel, **pool)
        return settings.master

    async def close(self) -> None:
        await super().close()
        for client in self.sentinel.sentinels:
            await client.aclose()

    async def _before_call(self) -> None:
        await super()._before_call()
        if self.watch.due:
            with translated(self._where):
                await self._master_pool.get_master_address()  # type: ignore[no-untyped-call]
            self.watch.checked()
