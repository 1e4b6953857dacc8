"""What an item store hands a backend that keeps its embeddings (today the
PostgreSQL backend on pgvector, :mod:`.postgres.vectors`): the distance types
and the rows of the one append being made. Shared, so that the item store never
imports a backend's own modules."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["DISTANCES", "PENDING", "VectorRows", "has_pending"]

DISTANCES = ("cosine", "l2", "inner_product")
"""LangGraph PostgresStore's ``distance_type`` values, with its score conventions:
cosine similarity, minus the Euclidean distance, the inner product."""

@dataclass(frozen=True)
class VectorRows:
    """The embeddings of the item version an append stores, for the backend to keep
    in the append's transaction: ``session``'s batch's last entry is that version."""

    session: str
    expires: float | None
    paths: list[str]
    vectors: list[str]  # pgvector's text form, "[x,y,...]"


PENDING: ContextVar[VectorRows | None] = ContextVar("chatledger_pending_vectors", default=None)
"""Set around one append by LedgerStore, read by the PostgreSQL backend's append."""


def has_pending(session: str) -> bool:
    """Whether LedgerStore set rows for this append of ``session``."""
    rows = PENDING.get()
    return rows is not None and rows.session == session and bool(rows.paths)
