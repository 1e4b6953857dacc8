"""A backend's optional search of LedgerStore's items by distance, typed.

The PostgreSQL backend has it where the database has pgvector
(:mod:`chatledger._backends.postgres._async.vectors`); LedgerStore reaches it
through :func:`vector_searching`, past no private attribute of the store, and
calls it through :func:`.store.call_raw` (the store's retries and telemetry).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .._backends.contract import RawHistory
from .._backends.vectors import VectorRows
from .store import AsyncStore, raw_access

__all__ = ["AsyncVectorSearching", "vector_searching"]


@runtime_checkable
class AsyncVectorSearching(Protocol):
    """The search by distance of the item sessions under an id prefix, with the
    embeddings the backend keeps beside the entries."""

    @property
    def searches_by_distance(self) -> bool:
        """Whether it may be used now (the extension, table and grants were found)."""
        ...

    async def vector_search(self, prefix: str, query: list[float], distance: str, *,
                            limit: int, offset: int) -> list[tuple[str, float, RawHistory]]:
        """A page of the items with rows, best first: (session, score, newest entry)."""
        ...

    async def vector_count(self, prefix: str) -> int:
        """How many live items under ``prefix`` have rows."""
        ...

    async def vector_unrowed(self, prefix: str) -> list[tuple[str, RawHistory]]:
        """The live items under ``prefix`` with no rows: (session, newest entry)."""
        ...

    async def vector_backfill(self, rows: list[tuple[int, VectorRows]]) -> None:
        """Keep the rows of items found without them, each at its entry's seq."""
        ...


def vector_searching(store: AsyncStore) -> AsyncVectorSearching | None:
    """The store's backend's search by distance, if it has one and may use it
    (not with a keyring: the rows would hold in clear what the entries seal)."""
    backend = raw_access(store)
    if (isinstance(backend, AsyncVectorSearching) and backend.searches_by_distance
            and store.options.encryption is None):
        return backend
    return None
