"""A LedgerStore item's value as JSON, stored only if it comes back equal.

orjson writes what JSON cannot hold as something else: a NaN or an infinity
as ``null``, a tuple as a list, a datetime, UUID or dataclass as text or an
object. A get would return a different value than the put was given, and
nothing would say so; a put of such a value is refused instead, naming the
path of the first part that would change (``InvalidMessage``, in the words
the store uses for a message's metadata), and nothing is written. The check
is one decode and one comparison, both in C; the walk that names the path
(``check_json``, the store's own) runs only for a value that fails it, with
the encoder's own bounds: integers from -2**63 to 2**64 - 1 and 254 containers
nested (their contents one level further down), which are wider than a
message's metadata's (signed 64-bit, 64 levels).
"""

from __future__ import annotations

from typing import Any, NoReturn

import orjson

from .._errors import InvalidMessage
from .._validation import JsonRules, check_json

__all__ = ["value_json"]

_ENCODER = JsonRules(-(2**63), 2**64 - 1, "range JSON values are stored in, -2**63 to 2**64 - 1",
                     255)


def value_json(value: dict[str, Any], where: str) -> bytes:
    """``value`` as JSON bytes; InvalidMessage when it cannot come back equal."""
    try:
        text = orjson.dumps(value)
    except TypeError as exc:  # orjson.JSONEncodeError
        _refuse(value, where, f"the value cannot be stored as JSON: {exc}")
    if orjson.loads(text) != value:
        _refuse(value, where, "the value would not come back equal from JSON")
    return text


def _refuse(value: dict[str, Any], where: str, otherwise: str) -> NoReturn:
    """Refuse ``value``, naming the path of its first part JSON cannot hold exactly."""
    try:
        check_json(value, "value", _ENCODER)
    except InvalidMessage as refused:
        raise InvalidMessage(where, f"{refused.field}: {refused.reason}") from None
    raise InvalidMessage(where, otherwise)
