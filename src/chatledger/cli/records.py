"""The export format: one message a line of JSON, with its session, seq and every field.

``json_line`` and ``parse_line`` are inverses: a message exported and imported
compares equal to the original, ``created_at`` (offset and microseconds),
``id`` and ``data`` included. ``seq`` is kept in the record as where the
message stood. A message's ``data`` is bytes, which JSON cannot hold: its line
carries it as standard base64 text under ``data_b64`` (absent when the message
has none), the one place where the bytes are encoded.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from ..messages import Message

DATA_FIELD = "data_b64"
FIELDS = ("role", "content", "id", "name", "tool_calls", "tool_call_id", "metadata",
          "created_at", DATA_FIELD)


def record(message: Message) -> dict[str, Any]:
    """Every field of ``message`` by name but ``data``, ``created_at`` as ISO 8601."""
    return {"seq": message.seq, "role": message.role, "content": message.content,
            "id": message.id, "name": message.name, "tool_calls": message.tool_calls,
            "tool_call_id": message.tool_call_id, "metadata": message.metadata,
            "created_at": message.created_at.isoformat()}


def summary(message: Message) -> dict[str, Any]:
    """What ``show --json`` prints: the record, and the data's size, never its bytes."""
    shown = record(message)
    if message.data is not None:
        shown["data_bytes"] = len(message.data)
    return shown


def json_line(message: Message, session: str) -> str:
    """One exported line: the session id first, then the message, its data as base64."""
    line = {"session": session, **record(message)}
    if message.data is not None:
        line[DATA_FIELD] = base64.b64encode(message.data).decode("ascii")
    return orjson.dumps(line).decode()


@dataclass(frozen=True)
class Line:
    """A message read back from an exported line, with where it stood."""

    session: str
    seq: int
    message: Message
    number: int  # its line number in the file, for error messages


class BadLine(ValueError):
    """A line that is not an exported message; says which line and why."""


@dataclass(frozen=True)
class Emptied:
    """A session trimmed to no message: all that is left of it is its version."""

    session: str
    version: int
    number: int


def emptied_line(session: str, version: int) -> str:
    """The line of a session that holds no message any more (trimmed to nothing)."""
    return orjson.dumps({"session": session, "version": version}).decode()


def parse_line(text: str, number: int) -> Line | Emptied:
    """Read one exported line; ``BadLine`` names the line and what is wrong with it."""
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise BadLine(f"line {number}: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BadLine(f"line {number}: expected a JSON object, got {type(data).__name__}")
    if set(data) == {"session", "version"}:
        version = data["version"]
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise BadLine(f"line {number}: version must be a positive integer, got {version!r}")
        return Emptied(_text(data, "session", number), version, number)
    missing = [key for key in ("session", "seq", "role", "content", "id", "created_at")
               if key not in data]
    if missing:
        raise BadLine(f"line {number}: missing {', '.join(missing)}")
    unknown = sorted(set(data) - {"session", "seq", *FIELDS})
    if unknown:
        raise BadLine(f"line {number}: unknown field {unknown[0]!r}")
    return Line(_text(data, "session", number), _seq(data, number), _message(data, number),
                number)


def _message(data: dict[str, Any], number: int) -> Message:
    try:
        created = datetime.fromisoformat(_text(data, "created_at", number))
    except ValueError:
        raise BadLine(f"line {number}: created_at {data['created_at']!r} is not an "
                      "ISO 8601 time") from None
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
        raise BadLine(f"line {number}: {DATA_FIELD} is not base64 text ({exc})") from None


def _text(data: dict[str, Any], key: str, number: int) -> str:
    value = data[key]
    if not isinstance(value, str) or not value:
        raise BadLine(f"line {number}: {key} must be a non-empty string, got {value!r}")
    return value


def _seq(data: dict[str, Any], number: int) -> int:
    seq = data["seq"]
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
        raise BadLine(f"line {number}: seq must be a positive integer, got {seq!r}")
    return seq
