"""Following the master behind Sentinel: when to ask again, and how to connect.

A pooled connection is not asked again where the master is: after a failover,
an old master that comes back still believing it is master would take writes
that the sentinels then erase as they demote it. So at most every
``MASTER_CHECK`` seconds a call first asks the sentinels, and connections to a
former master are dropped. The window left (under a second) is closed by
``wait_replicas=1`` or the servers' own ``min-replicas-to-write``.
"""

from __future__ import annotations

import time
from typing import Any

from .config import SentinelSettings

__all__ = ["MASTER_CHECK", "MasterWatch", "sentinel_arguments"]

MASTER_CHECK = 0.5  # seconds between two questions to the sentinels from one store


class MasterWatch:
    """When to ask the sentinels again where the master is (no I/O)."""

    def __init__(self) -> None:
        self._checked = 0.0

    @property
    def due(self) -> bool:
        return time.monotonic() - self._checked > MASTER_CHECK

    def checked(self) -> None:
        self._checked = time.monotonic()


def sentinel_arguments(settings: SentinelSettings, retry: Any,
                       connection_class: type[Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Keyword arguments for the sentinel manager, and for the master's pool."""
    manager = {"sentinel_kwargs": {**settings.sentinel, "retry": retry}}
    pool = {"max_connections": settings.master.max_connections, "retry": retry,
            "connection_class": connection_class, **settings.master.connection}
    return manager, pool
