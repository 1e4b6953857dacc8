"""LedgerStore on pgvector: the distance its index config names, and the
rows an item's append hands the backend (:mod:`chatledger._backends.vectors`).

The backend keeps an item version's embeddings in its ``item_vectors`` table
in the transaction of the append storing it: :func:`pending` sets them, for
that append only. Not with a keyring: the rows would hold in clear what the
sealed entry holds (embeddings reveal their text's meaning); an encrypting
store scores in Python, from its entries.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .._backends.vectors import DISTANCES, PENDING, VectorRows
from ._item_entries import StoredItem

__all__ = ["distance_of", "pending", "rows_of"]


def distance_of(index: Any) -> str:
    """The index config's ``distance_type`` ("cosine" when absent), checked."""
    distance = (index or {}).get("distance_type", "cosine")
    if distance not in DISTANCES:
        raise ValueError(f"unsupported distance_type {distance!r}: use one of "
                         + ", ".join(map(repr, DISTANCES)))
    return str(distance)


@contextmanager
def pending(session_id: str, item: StoredItem, used: bool) -> Iterator[None]:
    """The append made inside stores ``item``'s embeddings with it (``used``: the
    backend keeps them; otherwise nothing is set)."""
    if not used or not item.vectors:
        yield
        return
    token = PENDING.set(rows_of(session_id, item))
    try:
        yield
    finally:
        PENDING.reset(token)


def rows_of(session_id: str, item: StoredItem) -> VectorRows:
    """The rows keeping ``item``'s embeddings in session ``session_id``."""
    return VectorRows(session_id, item.expires, list(item.vectors),
                      [_text(vector) for vector in item.vectors.values()])


def _text(stored: bytes) -> str:
    """pgvector's text form of a stored float32 embedding (exact: float32 to
    double and back loses nothing)."""
    vector = array("f")
    vector.frombytes(stored)
    return "[" + ",".join(map(repr, vector)) + "]"
