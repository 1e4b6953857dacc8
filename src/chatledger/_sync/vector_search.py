# Generated from src/chatledger/_async/vector_search.py by scripts/unasync.py: edit that file, not this one.
"""A backend's optional search of LedgerStore's items by distance, typed.

The PostgreSQL backend has it where the database has pgvector
(:mod:`chatledger._backends.postgres._sync.vectors`); LedgerStore reaches it
through :func:`vector_searching`, past no private attribute of the store, and
calls it through :func:`.store.call_raw` (the store's retries and telemetry).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .._backends.contract import RawHistory
from .._backends.vectors import VectorRows
from .store import Store, raw_access

__all__ = ["VectorSearching", "vector_searching"]


@runtime_checkable
class VectorSearching(Protocol):
    """The search by distance of the item sessions under an id prefix, with the
    embeddings the backend keeps beside the entries."""

    @property
    def searches_by_distance(self) -> bool:
        """Whether it may be used now (the extension, table and grants were found)."""
        ...

    def vector_search(self, prefix: str, query: list[float], distance: str, *,
                            limit: int, offset: int) -> list[tuple[str, float, RawHistory]]:
        """A page of the items with rows, best first: (session, score, newest entry)."""
        ...

    def vector_count(self, prefix: str) -> int:
        """How many live items under ``prefix`` have rows."""
        ...

    def vector_unrowed(self, prefix: str) -> list[tuple[str, RawHistory]]:
        """The live items under ``prefix`` with no rows: (session, newest entry)."""
        ...

    def vector_backfill(self, rows: list[tuple[int, VectorRows]]) -> None:
        """Keep the rows of items found without them, each at its entry's seq."""
        ...


def vector_searching(store: Store) -> VectorSearching | None:
    """The store's backend's search by distance, if it has one and may use it
    (not with a keyring: the rows would hold in clear what the entries seal)."""
    backend = raw_access(store)
    if (isinstance(backend, VectorSearching) and backend.searches_by_distance
            and store.options.encryption is None):
        return backend
    return None
