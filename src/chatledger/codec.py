"""The stored form of a message: one format byte, then compact JSON (orjson).

Text is stored as UTF-8, never as ``\\u`` escapes. The format byte lets a later
version change the layout while still reading what older versions wrote.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import orjson

from .errors import CorruptEntryError
from .messages import ROLES, Message

__all__ = ["FORMAT_V1", "decode", "encode"]

FORMAT_V1 = b"\x01"



def encode(message: Message) -> bytes:
    """Encode a validated message; see :mod:`chatledger.validation`.

    Keys are short since they repeat in every stored entry. An optional field
    is left out when it holds its default (None, [] or {}), never when it is "".
    """
    record: dict[str, Any] = {
        "r": message.role,
        "c": message.content,
        "i": message.id,
        "t": _stamp(message.created_at),
    }
    if message.name is not None:
        record["n"] = message.name
    if message.tool_calls:
        record["tc"] = message.tool_calls
    if message.tool_call_id is not None:
        record["tci"] = message.tool_call_id
    if message.metadata:
        record["m"] = message.metadata
    return FORMAT_V1 + orjson.dumps(record)


def _stamp(created: datetime) -> datetime | str:
    """``created`` as ISO 8601: orjson writes a naive or UTC datetime exactly as
    ``isoformat()`` does, only faster; anything else goes through the base
    class's ``isoformat`` (a subclass may override it)."""
    if type(created) is datetime and (created.tzinfo is None or created.tzinfo is timezone.utc):
        return created
    return datetime.isoformat(created)


def decode(session: str, seq: int, blob: bytes) -> Message:
    """Decode one stored entry, or raise :class:`CorruptEntryError` for it."""
    if blob[:1] != FORMAT_V1:
        raise CorruptEntryError(session, seq, f"unknown format byte {blob[:1]!r}")
    try:
        record = orjson.loads(memoryview(blob)[1:])  # no copy of the entry
        return _message_from(record, seq)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise CorruptEntryError(session, seq, str(exc) or type(exc).__name__) from exc


def _message_from(record: Any, seq: int) -> Message:
    if not isinstance(record, dict):
        raise TypeError(f"entry is a JSON {type(record).__name__}, not an object")
    role, content, msg_id = record["r"], record["c"], record["i"]
    if role not in ROLES or not isinstance(msg_id, str):
        raise ValueError(f"bad role {role!r} or id {msg_id!r}")
    if not isinstance(content, (str, list)):
        raise TypeError(f"content is a {type(content).__name__}")
    # Reads decode every message of a window: fill the fields directly rather
    # than through the frozen dataclass's __init__, which costs more than the
    # JSON parse. The fields are exactly Message's, in its order.
    message = Message.__new__(Message)
    message.__dict__.update(
        role=role,
        content=content,
        id=msg_id,
        name=record.get("n"),
        tool_calls=record.get("tc", []),
        tool_call_id=record.get("tci"),
        metadata=record.get("m", {}),
        created_at=datetime.fromisoformat(record["t"]),
        seq=seq,
    )
    return message
