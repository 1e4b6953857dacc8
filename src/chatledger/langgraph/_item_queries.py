"""What search and list_namespaces keep, decided without I/O.

Filters follow LangGraph's documented operators on the item's top-level
fields: a plain value (or ``$eq``) is equality, ``$ne`` its negation, and
``$gt $gte $lt $lte`` compare numbers with numbers and text with text (a
number never compares with text: such a condition is false, not an error).
A nested mapping without operators matches a nested object field by field. A
filter key names a top-level field, or, when the value has no such field, a
nested one by its dotted path (``"user.access-level"``), as LangGraph's SQL
stores read it.
"""

from __future__ import annotations

import math
import operator
import sys
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langgraph.store.base import MatchCondition

__all__ = ["cosine", "listed_namespaces", "literal_prefix", "matches_filter", "matches_namespace",
           "similarity", "to_float32"]

_ORDERS = {
    "$gt": lambda a, b: a > b, "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b, "$lte": lambda a, b: a <= b,
}


def matches_filter(value: Mapping[str, Any], wanted: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a search filter (None: every item does)."""
    return not wanted or all(_matches(_field(value, name), condition)
                             for name, condition in wanted.items())


def _field(value: Mapping[str, Any], name: str) -> Any:
    if name in value or "." not in name:
        return value.get(name)
    found: Any = value
    for part in name.split("."):
        if not isinstance(found, Mapping):
            return None
        found = found.get(part)
    return found


def _matches(found: Any, condition: Any) -> bool:
    if isinstance(condition, Mapping):
        if any(str(name).startswith("$") for name in condition):
            return all(_operator(found, name, operand) for name, operand in condition.items())
        return isinstance(found, Mapping) and all(
            _matches(found.get(name), inner) for name, inner in condition.items())
    return _equal(found, condition)


def _operator(found: Any, name: str, operand: Any) -> bool:
    if name == "$eq":
        return _equal(found, operand)
    if name == "$ne":
        return not _equal(found, operand)
    order = _ORDERS.get(name)
    if order is None:
        raise ValueError(f"unsupported filter operator {name!r}: use one of "
                         "$eq, $ne, $gt, $gte, $lt, $lte")
    if _is_number(found) and _is_number(operand):
        return bool(order(found, operand))
    if isinstance(found, str) and isinstance(operand, str):
        return bool(order(found, operand))
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _equal(found: Any, wanted: Any) -> bool:
    # JSON's view: true is not 1, as in PostgreSQL's jsonb.
    if isinstance(found, bool) or isinstance(wanted, bool):
        return isinstance(found, bool) and isinstance(wanted, bool) and found == wanted
    if isinstance(wanted, (list, tuple)):
        return (isinstance(found, (list, tuple)) and len(found) == len(wanted)
                and all(_equal(a, b) for a, b in zip(found, wanted, strict=True)))
    return bool(found == wanted)


def matches_namespace(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    """Whether ``namespace`` matches one prefix or suffix condition (``*``: any label)."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        compared = namespace[:len(path)]
    elif condition.match_type == "suffix":
        compared = namespace[len(namespace) - len(path):]
    else:
        raise ValueError(f"unsupported match type {condition.match_type!r}: "
                         "use 'prefix' or 'suffix'")
    return all(want in ("*", got) for got, want in zip(compared, path, strict=True))


def listed_namespaces(namespaces: Iterable[tuple[str, ...]],
                      conditions: Sequence[MatchCondition] | None,
                      max_depth: int | None) -> list[tuple[str, ...]]:
    """The namespaces kept by every condition, cut to ``max_depth``, sorted, unique."""
    kept = {ns if max_depth is None else ns[:max_depth] for ns in namespaces
            if all(matches_namespace(ns, condition) for condition in conditions or ())}
    return sorted(kept)


def literal_prefix(conditions: Sequence[MatchCondition] | None) -> tuple[str, ...]:
    """The labels every namespace kept by ``conditions`` starts with: those of a
    prefix condition before its first ``*`` (none without a prefix condition)."""
    for condition in conditions or ():
        if condition.match_type == "prefix":
            path = tuple(condition.path)
            return path[:path.index("*")] if "*" in path else path
    return ()


def to_float32(vector: Sequence[float], dims: int) -> bytes:
    """An embedding as ``dims`` little-endian float32 (4 bytes each)."""
    if len(vector) != dims:
        raise ValueError(f"an embedding has {len(vector)} dimensions, index['dims'] is {dims}")
    packed = array("f", vector)
    if packed.itemsize != 4:  # pragma: no cover -- every platform CPython runs on
        raise RuntimeError("float32 is not 4 bytes on this platform")
    if sys.byteorder == "big":  # pragma: no cover -- stored little-endian everywhere
        packed.byteswap()
    return packed.tobytes()


def _unpacked(stored: bytes) -> array[float]:
    vector = array("f")
    vector.frombytes(stored)
    if sys.byteorder == "big":  # pragma: no cover -- stored little-endian everywhere
        vector.byteswap()
    return vector


def similarity(distance: str, query: Sequence[float], stored: bytes,
               query_norm: float | None = None) -> float:
    """An item field's score for ``distance``, higher is closer, as LangGraph's
    PostgresStore scores it: cosine similarity ("cosine"), minus the Euclidean
    distance ("l2"), the inner product ("inner_product")."""
    if distance == "cosine":
        return cosine(query, stored, query_norm)
    vector = _unpacked(stored)
    if distance == "l2":
        return -math.dist(query, vector)
    return math.fsum(map(operator.mul, query, vector))


def cosine(query: Sequence[float], stored: bytes, query_norm: float | None = None) -> float:
    """Cosine similarity of a query embedding with a stored float32 one (0 if either is 0);
    ``query_norm``: the query's norm, computed once for a whole search."""
    vector = _unpacked(stored)
    dot = sum(map(operator.mul, query, vector))
    norms = (math.hypot(*query) if query_norm is None else query_norm) * math.hypot(*vector)
    return dot / norms if norms else 0.0
