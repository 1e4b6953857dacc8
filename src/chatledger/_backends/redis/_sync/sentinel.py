# Generated from src/chatledger/_backends/redis/_async/sentinel.py by scripts/unasync.py: edit that file, not this one.
"""``redis+sentinel://``: Redis behind Sentinel, following the master through failovers.

The same scripts and calls as :mod:`.client`; only the pool differs: each new
connection asks the sentinels where the master is now, and a store asks again
every so often (:mod:`..failover`). During a failover the sentinels know no
master, or the old master answers READONLY as it is demoted: both are
BackendUnavailable, which the store retries (with the same ids, so an append
whose reply was lost in the switch is not doubled). Acknowledged writes that
had not reached the promoted replica are lost by Redis itself in a failover;
``wait_replicas=1`` makes an append wait for one (with WAITAOF where the
master has it, asked again of each new master).
"""

from __future__ import annotations

from typing import Any, ClassVar

from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelConnectionPool
from redis.backoff import NoBackoff

from ...._options import StoreOptions
from ...._url import StoreURL
from ...registry import builtin_schemes
from ..config import ConnectionSettings, sentinel_settings
from ..errors import translated
from ..failover import MasterWatch, sentinel_arguments
from ..transport import SENTINEL_CONNECTION
from .client import RedisBackend

__all__ = ["SentinelBackend"]


class SentinelBackend(RedisBackend):
    """The Redis backend with a pool that follows the master."""

    schemes: ClassVar[tuple[str, ...]] = builtin_schemes(__name__)

    def _open_pool(
        self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]
    ) -> ConnectionSettings:
        settings = sentinel_settings(url, options, extra)
        manager, pool = sentinel_arguments(settings, Retry(NoBackoff(), 0),
                                           SENTINEL_CONNECTION)
        self.watch = MasterWatch()
        self._master_address: object = None
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
                address = self._master_pool.get_master_address()  # type: ignore[no-untyped-call]
            self.watch.checked()
            if address != self._master_address:
                self._master_address = address
                self.node.confirmation = None  # a new master: is it 7.2+ with an AOF? Ask it.
                self.node.sender.retire()  # the pool drops its idle connections itself
