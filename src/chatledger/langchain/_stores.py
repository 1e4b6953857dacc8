"""The stores behind ``ChatLedgerHistory.from_url``: one per URL and options.

LangChain builds a history per turn, so ``from_url`` is called per turn; opening
a store each time would open a connection pool (or a SQLite connection) per
turn and never close it. A process keeps one store per URL and options instead,
which also lets the histories of a session share what they have seen of it.
"""

from __future__ import annotations

import threading
from typing import Any

from .._sync.store import Store, open_store

__all__ = ["close_shared_stores", "shared_store"]

_stores: dict[tuple[str, tuple[tuple[str, Any], ...]], Store] = {}
_lock = threading.Lock()


def shared_store(url: str, options: dict[str, Any]) -> Store:
    """The process's store for ``url`` and ``options``, opened on first use."""
    key = (url, tuple(sorted(options.items())))
    with _lock:
        store = _stores.get(key)
        if store is None:
            store = _stores[key] = open_store(url, **options)
        return store


def close_shared_stores() -> None:
    """Close every store ``from_url`` opened (at shutdown, or between tests)."""
    with _lock:
        stores = list(_stores.values())
        _stores.clear()
    for store in stores:
        store.close()
