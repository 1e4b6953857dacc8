"""The export format: one message a line of JSON, with its session, seq and every field.

``json_line`` and ``parse_line`` are inverses: a message exported and imported
compares equal to the original, ``created_at`` (offset and microseconds),
``id``, ``data`` and every number included. ``seq`` is kept in the record as
where the message stood. A message's ``data`` is bytes, which JSON cannot
hold: its line carries it as standard base64 text under ``data_b64`` (absent
when the message has none), the one place where the bytes are encoded. A
session tagged with a user (``forget_user``) names it under ``user`` on each of
its lines (absent when it has none).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from .._core import MAX_VERSION
from .._messages import Message
from ._errors import BadRecord

DATA_FIELD = "data_b64"
FIELDS = ("role", "content", "id", "name", "tool_calls", "tool_call_id", "metadata",
          "created_at", DATA_FIELD)
USER_FIELD = "user"
MAX_SEQ = MAX_VERSION  # seqs and versions are signed 64-bit integers in every backend


def record(message: Message) -> dict[str, Any]:
    """Every field of ``message`` by name but ``data``, ``created_at`` as ISO 8601."""
    return {"seq": message.seq, "role": message.role, "content": message.content,
            "id": message.id, "name": message.name, "tool_calls": message.tool_calls,
            "tool_call_id": message.tool_call_id, "metadata": message.metadata,
            "created_at": message.created_at.isoformat()}


def json_line(message: Message, session: str, user: str | None = None) -> str:
    """One exported line: the session id first, then the message, its data as base64,
    then the session's user, if it has one."""
    line = {"session": session, **record(message)}
    if message.data is not None:
        line[DATA_FIELD] = base64.b64encode(message.data).decode("ascii")
    if user is not None:
        line[USER_FIELD] = user
    return orjson.dumps(line).decode()


def emptied_line(session: str, version: int, user: str | None = None) -> str:
    """The line of a session that holds no message any more (trimmed to nothing)."""
    line: dict[str, Any] = {"session": session, "version": version}
    if user is not None:
        line[USER_FIELD] = user
    return orjson.dumps(line).decode()


@dataclass(frozen=True)
class Line:
    """A message read back from an exported line, with where it stood."""

    session: str
    seq: int
    message: Message
    number: int  # its line number in the file, for error messages
    user: str | None = None  # the session's user (forget_user), if it has one


@dataclass(frozen=True)
class Emptied:
    """A session trimmed to no message: all that is left of it is its version."""

    session: str
    version: int
    number: int
    user: str | None = None


def parse_line(text: bytes | str, number: int) -> Line | Emptied:
    """Read one exported line; ``BadRecord`` names the line and what is wrong with it.

    Numbers are read exactly: an integer stays the integer it was, however
    long (the store refuses those beyond 64 bits, naming the field, as an
    append would), and a float is the double nearest its text.
    """
    data = _loads(text.encode() if isinstance(text, str) else text, number)
    if not isinstance(data, dict):
        raise BadRecord(number, f"expected a JSON object, got {type(data).__name__}")
    user = _text(data, USER_FIELD, number) if USER_FIELD in data else None
    if set(data) - {USER_FIELD} == {"session", "version"}:
        return Emptied(_text(data, "session", number), _count(data, "version", number),
                       number, user)
    missing = [key for key in ("session", "seq", "role", "content", "id", "created_at")
               if key not in data]
    if missing:
        raise BadRecord(number, f"missing {', '.join(missing)}", missing[0])
    unknown = sorted(set(data) - {"session", "seq", USER_FIELD, *FIELDS})
    if unknown:
        raise BadRecord(number, f"unknown field {unknown[0]!r}", unknown[0])
    return Line(_text(data, "session", number), _count(data, "seq", number),
                _message(data, number), number, user)


# orjson reads an integer beyond 64 bits as a float, silently (2**64 comes back
# as 1.8446744073709552e+19). Every such integer has 19 digits or more, so a
# line with a run of 19 digits (in a number or in a string) goes to the standard
# library's parser, which keeps integers exact; both round floats correctly.
# The run is found by mapping digits to "0" and the rest to " ": a few times
# faster than a regular expression, and this runs on every line, twice.
_DIGITS_ONLY = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN = b"0" * 19


def _loads(raw: bytes, number: int) -> Any:
    try:
        if _LONG_RUN in raw.translate(_DIGITS_ONLY):
            return _exact(raw)
        data = orjson.loads(raw)
        # orjson keeps the last of a key given twice, silently. A line as orjson writes
        # its value (an export's) has none; another goes through the standard parser,
        # whose hook sees every pair (what orjson reads, it reads too).
        if orjson.dumps(data) != raw.strip():
            _exact(raw)
        return data
    except _DuplicateKey as exc:
        raise BadRecord(number, str(exc)) from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise BadRecord(number, f"not JSON ({exc})") from None


class _DuplicateKey(ValueError):
    pass


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's pairs as a dict, refusing a key given twice: which value is meant?"""
    found = dict(pairs)
    if len(found) < len(pairs):
        twice = next(key for key, count in Counter(key for key, _ in pairs).items()
                     if count > 1)
        raise _DuplicateKey(f"the key {twice!r} is given twice in one object")
    return found


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _int(text: str) -> int:
    # Python refuses to read an integer of over 4300 digits with a hint about
    # sys.set_int_max_str_digits; any of over 100 is simply out of range.
    if len(text) > 100:
        raise ValueError(f"an integer of {len(text.lstrip('-'))} digits, far outside the "
                         "signed 64-bit range")
    return int(text)


# NaN and Infinity are no JSON; orjson refuses them too.
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_int=_int,
                            object_pairs_hook=_unique)


def _exact(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8: {exc}") from None
    return _DECODER.decode(text)


def _message(data: dict[str, Any], number: int) -> Message:
    try:
        created = datetime.fromisoformat(_text(data, "created_at", number))
    except ValueError:
        raise BadRecord(number, f"created_at {data['created_at']!r} is not an ISO 8601 time",
                        "created_at") from None
    optional = {key: data[key] for key in ("name", "tool_calls", "tool_call_id", "metadata")
                if data.get(key) is not None}
    if DATA_FIELD in data:
        optional["data"] = _bytes(data[DATA_FIELD], number)
    # Types are checked by the store (InvalidMessage names the field), as for any append.
    return Message(role=data["role"], content=data["content"], id=data["id"],
                   created_at=created, **optional)


def _bytes(text: object, number: int) -> bytes:
    try:
        if not isinstance(text, str):
            raise TypeError(type(text).__name__)
        return base64.b64decode(text, validate=True)  # a stray character is an error, not skipped
    except (TypeError, binascii.Error) as exc:
        raise BadRecord(number, f"{DATA_FIELD} is not base64 text ({exc})", DATA_FIELD) from None


def _text(data: dict[str, Any], key: str, number: int) -> str:
    value = data[key]
    if not isinstance(value, str) or not value:
        raise BadRecord(number, f"{key} must be a non-empty string, got {value!r}", key)
    return value


def _count(data: dict[str, Any], key: str, number: int) -> int:
    """A seq or a version: a positive integer that fits the store's 64 bits."""
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SEQ:
        raise BadRecord(number, f"{key} must be a positive integer (at most {MAX_SEQ}), "
                        f"got {value!r}", key)
    return value
