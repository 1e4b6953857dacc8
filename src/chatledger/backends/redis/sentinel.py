"""``redis+sentinel://``: Redis behind Sentinel, following the master through failovers.

The same scripts and calls as :mod:`.sync` and :mod:`.aio`; only the pool
differs: each new connection asks the sentinels where the master is now. During
a failover the sentinels know no master, or the old master answers READONLY as
it is demoted: both are BackendUnavailable, which the store retries (with the
same ids, so an append whose reply was lost in the switch is not doubled).
Acknowledged writes that had not reached the promoted replica are lost by
Redis itself in a failover; ``wait_replicas=1`` makes an append wait for one.
"""

from __future__ import annotations

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
from .config import ConnectionSettings, sentinel_settings
from .sync import RedisBackend

__all__ = ["AsyncSentinelBackend", "SentinelBackend"]


class SentinelBackend(RedisBackend):
    """The sync Redis backend with a pool that follows the master."""

    schemes: ClassVar[tuple[str, ...]] = ("redis+sentinel",)

    def _open_pool(
        self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]
    ) -> ConnectionSettings:
        settings = sentinel_settings(url, options, extra)
        self.sentinel = Sentinel(settings.sentinels, sentinel_kwargs={  # type: ignore[no-untyped-call]
            **settings.sentinel, "retry": Retry(NoBackoff(), 0)})
        self.pool = SentinelConnectionPool(  # type: ignore[no-untyped-call]
            settings.service, self.sentinel,
            max_connections=settings.master.max_connections,
            retry=Retry(NoBackoff(), 0),
            **settings.master.connection,
        )
        return settings.master

    def close(self) -> None:
        super().close()
        for client in self.sentinel.sentinels:
            client.close()


class AsyncSentinelBackend(AsyncRedisBackend):
    """The async Redis backend with a pool that follows the master."""

    schemes: ClassVar[tuple[str, ...]] = ("redis+sentinel",)

    def _open_pool(
        self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]
    ) -> ConnectionSettings:
        settings = sentinel_settings(url, options, extra)
        self.sentinel = AsyncSentinel(settings.sentinels, sentinel_kwargs={  # type: ignore[no-untyped-call]
            **settings.sentinel, "retry": AsyncRetry(NoBackoff(), 0)})
        self.pool = AsyncSentinelConnectionPool(  # type: ignore[no-untyped-call]
            settings.service, self.sentinel,
            max_connections=settings.master.max_connections,
            retry=AsyncRetry(NoBackoff(), 0),
            **settings.master.connection,
        )
        return settings.master

    async def close(self) -> None:
        await super().close()
        for client in self.sentinel.sentinels:
            await client.aclose()


