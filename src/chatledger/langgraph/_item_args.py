"""What a LedgerStore is opened with and each operation carries, checked in
LangGraph's terms before anything runs.

``BaseStore``'s methods pass their arguments on unchecked: a ``ttl`` of 0
minutes would store an item that is already expired (every put lost, without a
word), a negative ``limit`` would slice from the end, a ``value`` that is not a
dict would fail deep in the encoder, a ttl of 1e300 minutes would be an
expiry no time holds. Each is refused here with a ``ValueError``
or ``TypeError`` naming the argument, and nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchOp,
    validate_op_namespace,
)

from .._core import check_count
from .._options import MAX_TTL
from ._item_layout import checked_item_id

__all__ = ["check_embedded", "check_index_config", "check_op", "check_put_namespace",
           "check_ttl_config"]

MAX_TTL_MINUTES = MAX_TTL / 60.0
"""The longest ttl in minutes: a century, as the store's own ``ttl`` in seconds."""


def check_ttl_config(ttl: Any) -> None:
    """A ``TTLConfig``: minutes that are positive and at most a century, or None."""
    if ttl is None:
        return
    if not isinstance(ttl, Mapping):
        raise TypeError("ttl must be a TTLConfig (a dict of default_ttl, refresh_on_read, "
                        f"sweep_interval_minutes), got {type(ttl).__name__}")
    for name in ("default_ttl", "sweep_interval_minutes"):
        _minutes(ttl.get(name), f"ttl['{name}']")
    if not isinstance(ttl.get("refresh_on_read", True), bool):
        raise TypeError("ttl['refresh_on_read'] must be a bool, got "
                        f"{type(ttl['refresh_on_read']).__name__}")


def check_index_config(index: Any) -> None:
    """An ``IndexConfig``: positive int ``dims`` and an ``embed``."""
    if index is None:
        return
    if not isinstance(index, Mapping):
        raise TypeError(f"index must be an IndexConfig (a dict of dims, embed, fields), "
                        f"got {type(index).__name__}")
    dims = index.get("dims")
    if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
        raise ValueError(f"index['dims'] must be a positive int, got {dims!r}")
    if index.get("embed") is None:
        raise ValueError("index['embed'] is required: an Embeddings or a function of texts")


def check_put_namespace(op: PutOp) -> None:
    """The namespace checks of ``BaseStore.put``, in LangGraph's words (its own function
    for them is private): not empty, labels as ``validate_op_namespace`` wants them,
    and not under the root label ``langgraph``, which LangGraph keeps for itself."""
    if not op.namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    validate_op_namespace(op)
    if op.namespace[0] == "langgraph":
        raise InvalidNamespaceError(
            f'Root label for namespace cannot be "langgraph". Got: {op.namespace}')


def check_op(op: Op) -> None:
    """One operation's arguments (its namespace is LangGraph's to check), its key
    with its namespace too: a batch checks every op before any runs."""
    if isinstance(op, (PutOp, GetOp)):
        checked_item_id(tuple(op.namespace), op.key)
    if isinstance(op, PutOp):
        if op.value is not None and not isinstance(op.value, dict):
            raise TypeError(f"the value of item {op.key!r} must be a dict, "
                            f"got {type(op.value).__name__}")
        _minutes(op.ttl, "ttl")
        if not (op.index is None or op.index is False or _texts(op.index)):
            raise TypeError(f"index must be False, None or a list of field paths, "
                            f"got {op.index!r}")
    elif isinstance(op, SearchOp):
        check_count(op.limit, "limit")
        check_count(op.offset, "offset")
        if op.filter is not None and not isinstance(op.filter, Mapping):
            raise TypeError(f"filter must be a dict, got {type(op.filter).__name__}")
        if op.query is not None and not isinstance(op.query, str):
            raise TypeError(f"query must be a str, got {type(op.query).__name__}")
    elif isinstance(op, ListNamespacesOp):
        check_count(op.limit, "limit")
        check_count(op.offset, "offset")
        if op.max_depth is not None:
            check_count(op.max_depth, "max_depth", least=1)


def _minutes(value: Any, what: str) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number of minutes, got {type(value).__name__}")
    if not 0 < value <= MAX_TTL_MINUTES:  # also refuses NaN
        raise ValueError(f"{what} must be a positive number of minutes, at most "
                         f"{MAX_TTL_MINUTES:g} (a century), or None, got {value!r}")


def _texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(path, str) for path in value)


def check_embedded(vectors: Any, texts: int) -> None:
    """What the index's ``embed`` returned for ``texts`` texts: a vector each."""
    sized = hasattr(vectors, "__len__") and not isinstance(vectors, (str, bytes))
    if not sized or len(vectors) != texts:
        got = f"{len(vectors)} vectors" if sized else type(vectors).__name__
        raise ValueError(f"index['embed'] returned {got} for {texts} texts: it must return "
                         "a list of one vector per text")
