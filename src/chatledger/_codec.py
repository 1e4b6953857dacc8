"""The stored form of a message: one format byte, then compact JSON (orjson).

Text is stored as UTF-8, never as ``\\u`` escapes. The format byte lets a later
version change the layout while still reading what older versions wrote:

* ``0x01`` + JSON: a message without ``data``, byte for byte what every
  version before ``data`` existed wrote, so old entries and new ones of this
  kind are the same;
* ``0x02`` + the JSON's length (4 bytes, big-endian) + JSON + the data bytes
  as they are: the payload is never base64'd or escaped, so it costs its own
  size, and decoding takes it with one copy;
* ``0x03``: one of the above sealed with AES-256-GCM, when the store has a
  keyring; :mod:`chatledger._crypto` opens it before this module decodes it.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import orjson

from ._errors import CorruptEntryError, InvalidMessage
from ._messages import ROLES, Message
from ._wording import with_article

__all__ = ["FORMAT_V1", "FORMAT_V2", "decode", "encode", "encode_system"]

FORMAT_V1 = b"\x01"
FORMAT_V2 = b"\x02"
_HEAD = 5  # FORMAT_V2 and the JSON's length


def encode(message: Message) -> bytes:
    """Encode a validated message; see :mod:`chatledger._validation`.

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
    if message.data is None:
        return FORMAT_V1 + orjson.dumps(record)
    header = orjson.dumps(record)
    return b"".join((FORMAT_V2, len(header).to_bytes(4, "big"), header, message.data))


def encode_system(message_id: str, metadata: dict[str, Any], data: bytes) -> bytes:
    """What :func:`encode` makes of ``Message(role="system", content="", id=message_id,
    metadata=metadata, data=data)`` created now, without the Message: an entry
    chatledger builds itself (a LedgerStore item's), one per call. ``metadata``
    not empty."""
    header = orjson.dumps({"r": "system", "c": "", "i": message_id,
                           "t": datetime.now(timezone.utc), "m": metadata})
    return b"".join((FORMAT_V2, len(header).to_bytes(4, "big"), header, data))


def _stamp(created: datetime) -> datetime | str:
    """``created`` as ISO 8601: orjson writes a naive or UTC datetime exactly as
    ``isoformat()`` does, only faster; anything else goes through the base
    class's ``isoformat`` (a subclass may override it)."""
    if type(created) is datetime and (created.tzinfo is None or created.tzinfo is timezone.utc):
        return created
    return datetime.isoformat(created)


def decode(session: str, seq: int, blob: bytes) -> Message:
    """Decode one stored entry, or raise :class:`CorruptEntryError` for it."""
    form = blob[:1]
    try:
        if form == FORMAT_V1:
            return _message_from(orjson.loads(memoryview(blob)[1:]), seq, None)  # no copy
        if form == FORMAT_V2:
            return _with_data(blob, seq)
    except orjson.JSONDecodeError as exc:  # the parser's words alone read like a usage error
        raise CorruptEntryError(session, seq, f"its bytes are not valid JSON ({exc})") from exc
    except KeyError as exc:  # str() of it is the bare key: "'r'"
        raise CorruptEntryError(session, seq, f"its record has no field {exc.args[0]!r}"
                                ) from exc
    except (TypeError, ValueError) as exc:
        raise CorruptEntryError(session, seq, str(exc) or type(exc).__name__) from exc
    raise CorruptEntryError(session, seq, f"unknown format byte {form!r}")


def _with_data(blob: bytes, seq: int) -> Message:
    """A FORMAT_V2 entry: the JSON header, then the data (its one copy)."""
    if len(blob) < _HEAD:
        raise ValueError(f"truncated: {len(blob)} bytes, shorter than the {_HEAD}-byte head")
    view = memoryview(blob)
    end = _HEAD + int.from_bytes(view[1:_HEAD], "big")
    if end > len(blob):
        raise ValueError(f"truncated: the head announces {end - _HEAD:,} bytes of JSON, "
                         f"{len(blob) - _HEAD:,} follow it")
    return _message_from(orjson.loads(view[_HEAD:end]), seq, bytes(view[end:]))


def _message_from(record: Any, seq: int, data: bytes | None) -> Message:
    if type(record) is not dict:
        raise TypeError(f"entry is a JSON {type(record).__name__}, not an object")
    role, content, msg_id = record["r"], record["c"], record["i"]
    if role not in ROLES or type(msg_id) is not str:
        raise ValueError(f"bad role {role!r} or id {msg_id!r}")
    if type(content) is not str:
        if type(content) is not list:
            raise TypeError(f"content is {with_article(type(content).__name__)}")
        _check_blocks(content)
    # Reads decode every message of a window: the fields are filled directly
    # rather than through the frozen dataclass's __init__, which costs more than
    # the JSON parse, and as the instance's own dict, not copied into one. The
    # fields are exactly Message's, in its order.
    get = record.get
    tool_calls = get("tc", [])
    if type(tool_calls) is not list:  # every reader of a message walks them as a list
        raise TypeError(f"its tool calls are {_JSON_KINDS.get(type(tool_calls), 'no list')}, "
                        "not a list")
    if tool_calls:  # most messages have none: no loop to set up on a read's hot path
        _check_calls(tool_calls)
    name, tool_call_id, metadata = get("n"), get("tci"), get("m", {})
    # What every reader of a message relies on (a budgeted read counts its text, a
    # summary read looks into its metadata): only a damaged entry breaks it.
    if type(metadata) is not dict:
        raise TypeError(f"its metadata is {_JSON_KINDS[type(metadata)]}, not an object")
    if (name is not None and type(name) is not str) or (
            tool_call_id is not None and type(tool_call_id) is not str):
        raise TypeError(f"its name or tool call id is not text: {name!r}, {tool_call_id!r}")
    message = _new_message(Message)
    _set(message, "__dict__", {
        "role": role,
        "content": content,
        "id": msg_id,
        "name": name,
        "tool_calls": tool_calls,
        "tool_call_id": tool_call_id,
        "metadata": metadata,
        "created_at": _parse_stamp(record["t"]),
        "data": data,
        "seq": seq,
    })
    return message


def _check_blocks(blocks: list[Any]) -> None:
    """Content blocks are text or objects, as an append stores them."""
    for number, block in enumerate(blocks, 1):
        if type(block) is not str and type(block) is not dict:
            raise TypeError(f"its content block {number} is {_JSON_KINDS[type(block)]}, "
                            "neither text nor an object")


def _check_calls(tool_calls: list[Any]) -> None:
    """Every reader of a message reads each call's id, name and args."""
    for number, call in enumerate(tool_calls, 1):
        try:
            check_call_shape(call, "it")
        except InvalidMessage as exc:
            raise ValueError(f"its tool call {number} is not one: {exc}") from None


def check_call_shape(call: object, path: str) -> None:
    """Raise InvalidMessage (at ``path``) unless ``call`` has a tool call's shape: an
    object with a str id and name and an object of args. An append checks it (and that
    the args are JSON); a read checks it again, since every reader of a message relies
    on it and only a damaged entry breaks it."""
    if not isinstance(call, dict):
        raise InvalidMessage(path, "must be an object with id, name and args, got "
                             f"{type(call).__name__}")
    for key in ("id", "name"):
        value = call.get(key)
        if not isinstance(value, str):
            raise InvalidMessage(f"{path}.{key}", f"must be a str, got {type(value).__name__}")
    if not isinstance(call.get("args"), dict):
        raise InvalidMessage(
            f"{path}.args", f"must be a JSON object, got {type(call.get('args')).__name__}")


_JSON_KINDS = {str: "a string", int: "a number", float: "a number", dict: "an object",
               list: "a list", bool: "true or false", type(None): "null"}
"""What a field read from JSON holds, in JSON's words, for the reason an entry is damaged."""

_new_message = object.__new__
_set = object.__setattr__  # a frozen dataclass refuses its own __setattr__
_parse_stamp = datetime.fromisoformat
