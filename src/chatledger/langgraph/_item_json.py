"""A LedgerStore item's value as JSON, stored only if it comes back equal.

orjson writes what JSON cannot hold as something else: a NaN or an infinity
as ``null``, a tuple as a list, a datetime, UUID or dataclass as text or an
object. A get would return a different value than the put was given, and
nothing would say so; a put of such a value is refused instead, naming the
path of the first part that would change (``InvalidMessage``), and nothing is
written. The check is one decode and one comparison, both in C; the walk that
names the path runs only for a value that fails it.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from .._errors import InvalidMessage

__all__ = ["value_json"]

_INT64 = (-(2**63), 2**63 - 1)


def value_json(value: dict[str, Any], where: str) -> bytes:
    """``value`` as JSON bytes; InvalidMessage when it cannot come back equal."""
    try:
        text = orjson.dumps(value)
    except TypeError as exc:  # orjson.JSONEncodeError
        raise InvalidMessage(where, _unstorable(value, "value") or
                             f"the value cannot be stored as JSON: {exc}") from None
    back = orjson.loads(text)
    if back != value:
        altered = _altered(value, back, "value")
        if altered is not None:
            raise InvalidMessage(where, altered)
    return text


def _altered(value: Any, back: Any, path: str) -> str | None:
    """How the first part of ``value`` that JSON returns changed (``back``) differs."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path} is not a finite number; JSON has no NaN or infinity"
    if type(value) is dict and type(back) is dict:
        parts = ((_altered(v, back[k], f"{path}.{k}")) for k, v in value.items())
    elif type(value) is list and type(back) is list:
        pairs = enumerate(zip(value, back, strict=True))  # JSON keeps a list's length
        parts = (_altered(v, b, f"{path}[{i}]") for i, (v, b) in pairs)
    elif value == back:
        return None
    else:
        return (f"{path} is a {type(value).__name__}, which JSON would return as "
                f"{_kind(back)}: store a JSON value (dict, list, str, int, float, bool, None)")
    return next((found for found in parts if found is not None), None)


def _unstorable(value: Any, path: str) -> str | None:
    """Why the first part of ``value`` orjson refuses cannot be stored, in our words."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} has the key {key!r} ({type(key).__name__}): keys must be str"
            found = _unstorable(item, f"{path}.{key}")
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        return next((found for i, item in enumerate(value)
                     if (found := _unstorable(item, f"{path}[{i}]")) is not None), None)
    elif isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{path} contains a lone surrogate, which is not valid text"
    elif isinstance(value, int) and not _INT64[0] <= value <= _INT64[1]:
        return f"{path} is {value}, outside JSON's 64-bit integers"
    elif not isinstance(value, (bool, float, type(None))):
        try:
            orjson.dumps(value)
        except TypeError:
            return f"{path} is a {type(value).__name__}, which JSON cannot hold"
    return None


def _kind(back: Any) -> str:
    return "null" if back is None else f"a {type(back).__name__}"
