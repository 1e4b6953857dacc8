"""Checks that make promise 7 hold: exact round-trip, or a clear rejection.

Everything a backend stores goes through :func:`encode_batch` first, so a value
that could not come back equal (a lone surrogate, a datetime in metadata, NaN,
a tuple that would return as a list) is refused before any I/O, with the path
of the offending field.

:func:`encode_own` is the one exception, private to chatledger: entries the
library built itself from known types (a checkpointer's) are encoded without
the field-by-field walk, which costs several times the encoding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple

import orjson

from ._codec import check_call_shape, encode
from ._errors import InvalidMessage
from ._messages import ROLES, Message
from ._wording import with_article

__all__ = ["MAX_ID_CHARS", "MAX_JSON_DEPTH", "MAX_KEY_BYTES", "MAX_NAMESPACE_BYTES", "JsonRules",
           "check_json", "check_key", "encode_batch", "encode_own"]

MAX_ID_CHARS = 256
# Bytes of UTF-8, the same on every backend, so that the largest of each fit the
# tightest backend's keys together: a session id and a user id 1,024 (a DynamoDB
# sort key: the user index's, the sessions index's), a namespace 512 (with a
# session id, a DynamoDB partition key of at most 2,048; with a session id and a
# message id of 256 four-byte characters, a PostgreSQL index row of at most 2,704).
MAX_KEY_BYTES = 1024
MAX_NAMESPACE_BYTES = 512
MAX_JSON_DEPTH = 64


class JsonRules(NamedTuple):
    """What a JSON check accepts: integers from ``low`` to ``high`` (``ints`` names
    the range in an error) and values at most ``depth`` levels down."""

    low: int
    high: int
    ints: str
    depth: int


_MESSAGE_JSON = JsonRules(-(2**63), 2**63 - 1, "signed 64-bit range", MAX_JSON_DEPTH)


def encode_batch(messages: Sequence[Message], max_message_bytes: int) -> list[bytes]:
    """Validate a batch and return each message's stored form."""
    if type(messages) is not list:  # a list, as nearly every caller passes, needs no ABC check
        _check_sequence(messages)
    if not messages:
        raise InvalidMessage("messages", "the batch is empty")
    blobs = [_encode_one(message, index, max_message_bytes)
             for index, message in enumerate(messages)]
    if len(messages) > 1:
        _check_distinct_ids(messages)
    return blobs


def encode_own(messages: list[Message], max_message_bytes: int) -> list[bytes]:
    """The stored form of entries chatledger built itself, for the library's own use.

    The caller vouches for what the walk of :func:`encode_batch` would check:
    a batch of distinct ids of at most ``MAX_ID_CHARS``, a valid role, and
    metadata of str keys, 64-bit ints, finite floats, lists and dicts (the
    checkpoint ledger's entries, ``langgraph/_entries.py``). What comes from
    outside, its text (ids, channel names), the JSON encoder checks itself: a
    lone surrogate fails it, and then the walk names the field. The size
    limit holds as for any append.
    """
    if not messages:
        raise InvalidMessage("messages", "the batch is empty")
    blobs = []
    for index, message in enumerate(messages):
        try:
            blob = encode(message)
        except orjson.JSONEncodeError:
            blob = _encode_one(message, index, max_message_bytes)  # raises, naming the field
        if len(blob) > max_message_bytes:
            _encode_one(message, index, max_message_bytes)  # raises, in the usual words
        blobs.append(blob)
    return blobs


def _check_sequence(messages: object) -> None:
    if isinstance(messages, Message):
        raise InvalidMessage("messages", "expected a list of messages, got a single Message")
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise InvalidMessage("messages", f"expected a list of messages, got {_kind(messages)}")


def _check_distinct_ids(messages: Sequence[Message]) -> None:
    seen: dict[str, int] = {}
    for index, message in enumerate(messages):
        if message.id in seen:
            raise InvalidMessage(f"messages[{index}].id",
                                 f"repeats messages[{seen[message.id]}].id")
        seen[message.id] = index


def check_key(value: object, what: str, *, empty: bool = False,
              most: int | None = MAX_KEY_BYTES, nul: bool = False) -> str:
    """Validate a session id, user id, namespace or prefix: literal text, used as
    data, of at most ``most`` bytes of UTF-8 (None: any length); ``nul``: a NUL is
    allowed (text that is escaped before it becomes a key)."""
    # The usual key, ASCII: checked without encoding it, nor the checks below one by one.
    if type(value) is str and value.isascii() and (value or empty) and (
            nul or "\x00" not in value) and (most is None or len(value) <= most):
        return value
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {_kind(value)}")
    if not value and not empty:
        raise ValueError(f"{what} must not be empty")
    if not nul and "\x00" in value:
        raise ValueError(f"{what} {_shown(value)} contains a NUL character")
    if not _is_utf8(value):
        raise ValueError(f"{what} {_shown(value)} contains a lone surrogate, which is not "
                         "valid text")
    if most is None:
        return value
    size = len(value) if value.isascii() else len(value.encode("utf-8"))
    if size > most:
        raise ValueError(f"{what} is {size:,} bytes of UTF-8, over {most:,}")
    return value


def _shown(value: str) -> str:
    """The text in an error: its start, when it is longer than a line."""
    return repr(value) if len(value) <= 80 else f"{value[:60]!r}... ({len(value):,} characters)"


def _encode_one(message: object, index: int, max_bytes: int) -> bytes:
    if not isinstance(message, Message):
        raise InvalidMessage(_path(index), f"expected a chatledger Message, got {_kind(message)}")
    if not _is_plain_text(message):
        _check_fields(message, _path(index))
    try:
        blob = encode(message)
    except orjson.JSONEncodeError as exc:
        # Only text that is not valid Unicode gets here unchecked (see
        # _is_plain_text): the full check finds it and names its field.
        _check_fields(message, _path(index))
        raise InvalidMessage(  # pragma: no cover -- defensive: the check above names it
            _path(index), f"cannot be stored as JSON: {exc}"
        ) from exc
    if len(blob) > max_bytes:
        raise InvalidMessage(
            _path(index), f"is {len(blob):,} bytes encoded, over max_message_bytes={max_bytes:,}"
        )
    return blob


def _path(index: int) -> str:
    """A message's place in an error: made only for one (every message is encoded)."""
    return f"messages[{index}]"


def _is_plain_text(m: Message) -> bool:
    """A message of plain text, with nothing that needs walking: most messages.

    Every rule of :func:`_check_fields` holds for it except that its strings
    are valid Unicode, which the JSON encoder itself refuses to break; so such
    a message skips the field-by-field walk, which costs more than encoding.
    """
    return (
        type(m.role) is str
        and m.role in ROLES
        and type(m.content) is str
        and type(m.id) is str
        and 0 < len(m.id) <= MAX_ID_CHARS
        and (m.name is None or type(m.name) is str)
        and type(m.metadata) is dict
        and not m.metadata
        and type(m.tool_calls) is list
        and not m.tool_calls
        and (
            (m.role != "tool" and m.tool_call_id is None)
            or (m.role == "tool" and type(m.tool_call_id) is str and m.tool_call_id != "")
        )
        and type(m.created_at) is datetime
        and (m.created_at.tzinfo is None or m.created_at.tzinfo is timezone.utc)
        and (m.data is None or type(m.data) is bytes)
    )


def _check_fields(m: Message, path: str) -> None:
    if not isinstance(m.role, str) or m.role not in ROLES:
        raise InvalidMessage(f"{path}.role", f"{m.role!r} is not one of {sorted(ROLES)}")
    _check_id(m.id, f"{path}.id")
    _check_content(m.content, f"{path}.content")
    _check_optional_text(m.name, f"{path}.name")
    _check_tool_fields(m, path)
    if not isinstance(m.metadata, dict):
        raise InvalidMessage(f"{path}.metadata", f"must be a JSON object, got {_kind(m.metadata)}")
    # Each field's own object is level 0, 64 levels allowed below it: what metadata
    # always allowed, so that nothing stored before is refused when imported again.
    _check_json(m.metadata, f"{path}.metadata", 0)
    _check_stamp(m.created_at, f"{path}.created_at")
    _check_data(m.data, f"{path}.data")


def _check_data(value: object, path: str) -> None:
    """Only ``bytes``: a bytearray or memoryview would come back as bytes (and a
    memoryview could change under the store's feet), so it is refused, not copied."""
    if value is not None and not isinstance(value, bytes):
        raise InvalidMessage(path, f"must be bytes or None, got {_kind(value)}"
                             " (pass bytes(value) to store a copy)")


def _check_stamp(value: object, path: str) -> None:
    """A datetime stored as ISO 8601 text must parse back to the same instant and offset.

    Not so for a zoneinfo time in a DST fold or gap, or an offset with seconds'
    fractions: those are refused rather than changed.
    """
    if not isinstance(value, datetime):
        raise InvalidMessage(path, f"must be a datetime, got {_kind(value)}")
    back = datetime.fromisoformat(datetime.isoformat(value))
    if back != value or back.utcoffset() != value.utcoffset():
        raise InvalidMessage(
            path, f"{value!r} would not come back equal from ISO 8601 text; "
            "use UTC or a fixed-offset timezone"
        )


def _check_id(value: object, path: str) -> None:
    if not isinstance(value, str) or not value:
        raise InvalidMessage(path, f"must be a non-empty str, got {value!r}")
    if len(value) > MAX_ID_CHARS:
        raise InvalidMessage(path, f"is {len(value)} characters long, over {MAX_ID_CHARS}")
    _check_text(value, path)


def _check_content(content: object, path: str) -> None:
    if isinstance(content, str):
        _check_text(content, path)
        return
    if not isinstance(content, list):
        raise InvalidMessage(
            path, f"must be a str or a list of content blocks, got {_kind(content)}"
        )
    for index, block in enumerate(content):
        block_path = f"{path}[{index}]"
        if not isinstance(block, (str, dict)):
            raise InvalidMessage(block_path, f"must be a str or a JSON object, got {_kind(block)}")
        _check_json(block, block_path, 0)


def _check_tool_fields(m: Message, path: str) -> None:
    _check_optional_text(m.tool_call_id, f"{path}.tool_call_id")
    if m.role == "tool" and not m.tool_call_id:
        raise InvalidMessage(f"{path}.tool_call_id", "is required on a tool message")
    if m.role != "tool" and m.tool_call_id is not None:
        raise InvalidMessage(
            f"{path}.tool_call_id", f"is only allowed on tool messages, not {m.role}"
        )
    if not isinstance(m.tool_calls, list):
        raise InvalidMessage(f"{path}.tool_calls", f"must be a list, got {_kind(m.tool_calls)}")
    if m.tool_calls and m.role != "assistant":
        raise InvalidMessage(
            f"{path}.tool_calls", f"are only allowed on assistant messages, not {m.role}"
        )
    for index, call in enumerate(m.tool_calls):
        _check_tool_call(call, f"{path}.tool_calls[{index}]")


def _check_tool_call(call: object, path: str) -> None:
    check_call_shape(call, path)
    _check_json(call, path, -1)  # its args at level 0, as metadata and a content block


def _check_optional_text(value: object, path: str) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise InvalidMessage(path, f"must be a str or None, got {_kind(value)}")
    _check_text(value, path)


def _check_text(value: str, path: str) -> None:
    if not _is_utf8(value):
        raise InvalidMessage(path, "contains a lone surrogate, which is not valid Unicode text")


def check_json(value: Any, path: str, rules: JsonRules = _MESSAGE_JSON) -> None:
    """Refuse what JSON would not return equal, naming its path (``InvalidMessage``)."""
    _check_json(value, path, 1, rules)


def _check_json(value: Any, path: str, depth: int, rules: JsonRules = _MESSAGE_JSON) -> None:
    """Accept exactly what JSON round-trips: the path names the first offender."""
    if depth > rules.depth:
        raise InvalidMessage(path, f"nests deeper than {rules.depth} levels")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, str):
        _check_text(value, path)
    elif isinstance(value, int):
        if not rules.low <= value <= rules.high:
            raise InvalidMessage(path, f"integer {value} is outside the {rules.ints}")
    elif isinstance(value, float):
        if type(value) is not float:  # the JSON encoder takes no subclass of float
            raise InvalidMessage(path, f"is {with_article(f'float subclass {_kind(value)}')}; "
                                 "convert it to float first")
        if not math.isfinite(value):
            raise InvalidMessage(
                path, f"{value} is not a finite number; JSON has no NaN or infinity"
            )
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_json(item, f"{path}[{index}]", depth + 1, rules)
    elif isinstance(value, dict):
        _check_object(value, path, depth, rules)
    else:
        raise InvalidMessage(path, _not_json(value))


def _check_object(value: dict[Any, Any], path: str, depth: int,
                  rules: JsonRules = _MESSAGE_JSON) -> None:
    for key, item in value.items():
        if type(key) is not str:
            # A str subclass or str Enum key would make the JSON encoder fail
            # without a path: refuse it here, where the path is known.
            kind = f"str subclass {_kind(key)}" if isinstance(key, str) else _kind(key)
            raise InvalidMessage(path, f"has {with_article(kind)} key {key!r}; JSON keys are "
                                 "plain str (convert the key to str first)")
        _check_text(key, f"{path} key {key!r}")
        _check_json(item, f"{path}.{key}", depth + 1, rules)


def _not_json(value: object) -> str:
    hint = {
        "tuple": "use a list",
        "set": "use a sorted list",
        "frozenset": "use a sorted list",
        "bytes": "decode it or use base64 text",
        "datetime": "use an ISO 8601 string",
        "date": "use an ISO 8601 string",
        "Decimal": "use a string to keep every digit",
        "UUID": "use str(uuid)",
    }.get(type(value).__name__, "use str, int, float, bool, None, list or dict")
    return f"{_kind(value)} is not JSON ({hint}), so it would not come back equal"


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _kind(value: object) -> str:
    return type(value).__name__
