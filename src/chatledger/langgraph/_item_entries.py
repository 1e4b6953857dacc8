"""One version of a LedgerStore item as one ledger entry, and back.

An entry is a ``system`` message with no text: its ``data`` holds the value
as JSON (exact round-trip through orjson, as the saver's entries do) followed
by the item's embeddings as little-endian float32, and its metadata the
times and expiry::

    {"item": 1, "at": <updated, epoch s>, "created": <epoch s>,
     "exp": <expiry, epoch s, or null>, "ttl": <minutes or null>,
     "json": <bytes of JSON in data>, "vec": [<path>, ...]}

The expiry is stamped in the entry, so a read knows an item expired without
asking anything else: an expired item is never returned, swept or not. An
entry larger than one message may hold is stored in parts before it, in the
same append (``_parts``): ``parts_wanted`` says which read brings them, and
``whole_entry`` joins them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

import orjson

from .._errors import CorruptEntryError, InvalidMessage
from .._filled import set_at_once
from .._ids import new_id
from .._messages import Message
from ._item_json import value_json
from ._parts import join

__all__ = ["StoredItem", "entry_fields", "entry_of", "expired_entry", "expires_at", "item_of",
           "parts_wanted", "whole_entry"]

_FORMAT = 1


@set_at_once  # every put and every read of an item builds one
@dataclass(frozen=True)
class StoredItem:
    """An item as stored: its value, times (epoch seconds) and embeddings."""

    value: dict[str, Any]
    updated: float
    created: float
    expires: float | None = None
    ttl: float | None = None
    vectors: dict[str, bytes] = field(default_factory=dict)

    def expired(self, now: float) -> bool:
        return self.expires is not None and self.expires <= now

    def refreshed(self, now: float) -> StoredItem:
        """The same item, its expiry pushed to ``ttl`` minutes from ``now``."""
        return replace(self, expires=expires_at(self.ttl, now))

    def times(self) -> tuple[datetime, datetime]:
        """(created_at, updated_at) as LangGraph's Item has them."""
        return _datetime(self.created), _datetime(self.updated)


def expires_at(ttl_minutes: float | None, now: float) -> float | None:
    """When an item written at ``now`` with ``ttl_minutes`` expires."""
    return None if ttl_minutes is None else now + float(ttl_minutes) * 60.0


def entry_of(item: StoredItem, where: str) -> Message:
    """The entry storing ``item`` (a new id: every put is one version)."""
    metadata, data = entry_fields(item, where)
    return Message(role="system", content="", id=new_id(), metadata=metadata, data=data)


def entry_fields(item: StoredItem, where: str) -> tuple[dict[str, Any], bytes]:
    """The metadata and data of the entry storing ``item``."""
    text = value_json(item.value, where)
    # The entry is appended without the store's field-by-field walk (its builder
    # vouches for it: ``_append_own``), and JSON would store NaN or infinity as
    # null: a ttl that is not a finite number is refused here.
    if not math.isfinite(item.updated + item.created + (item.expires or 0.0)):
        raise InvalidMessage(where, f"the ttl {item.ttl!r} is not a finite number of minutes"
                             if item.expires is not None and not math.isfinite(item.expires)
                             else "the store's clock gave a time that is not a finite number")
    metadata: dict[str, Any] = {
        "item": _FORMAT, "at": item.updated, "created": item.created,
        "exp": item.expires, "ttl": item.ttl, "json": len(text),
        "vec": list(item.vectors)}
    vectors = item.vectors
    return metadata, text + b"".join(vectors.values()) if vectors else text


def item_of(entry: Message, session: str, dims: int | None) -> StoredItem:
    """The item an entry stores; CorruptEntryError when it is not one."""
    meta, data = entry.metadata, entry.data
    if meta.get("item") != _FORMAT or data is None:
        raise CorruptEntryError(session, entry.seq or 0, "it is no LedgerStore item")
    try:
        size = int(meta["json"])  # type: ignore[arg-type]
        value = orjson.loads(data[:size])
        width = 4 * (dims or 0)
        paths = [str(path) for path in meta.get("vec") or []]  # type: ignore[union-attr]
        vectors = {path: data[size + i * width:size + (i + 1) * width]
                   for i, path in enumerate(paths)} if width else {}
        return StoredItem(value, float(meta["at"]),  # type: ignore[arg-type]
                          float(meta["created"]),  # type: ignore[arg-type]
                          _number(meta.get("exp")), _number(meta.get("ttl")), vectors)
    except (KeyError, TypeError, ValueError) as exc:  # orjson's decode error is a ValueError
        raise CorruptEntryError(session, entry.seq or 0, f"a damaged item: {exc}") from exc


def expired_entry(entry: Message, session: str, now: float) -> bool:
    """Whether the item an entry stores has expired at ``now``, read from its metadata
    alone (its value is not decoded, nor its parts read); CorruptEntryError when the
    entry is no item."""
    meta = entry.metadata
    if meta.get("item") != _FORMAT:
        raise CorruptEntryError(session, entry.seq or 0, "it is no LedgerStore item")
    try:
        expires = _number(meta.get("exp"))
    except (TypeError, ValueError) as exc:
        raise CorruptEntryError(session, entry.seq or 0, f"a damaged item: {exc}") from exc
    return expires is not None and expires <= now


def parts_wanted(entry: Message, session: str) -> tuple[int, int] | None:
    """``(after, limit)`` of the read bringing the parts of an entry stored in parts;
    None for an entry stored whole."""
    lacking = _joined([entry], session)[1]
    return None if lacking is None else (lacking - 1, (entry.seq or 0) - lacking)


def whole_entry(parts: list[Message], entry: Message, session: str) -> Message | None:
    """The entry with its data joined from ``parts`` (as read for ``parts_wanted``);
    None when a part is missing."""
    whole, lacking = _joined([*parts, entry], session, entry.seq or 0)
    return None if lacking is not None else whole[-1]


def _joined(messages: list[Message], session: str,
            since: int = 0) -> tuple[list[Message], int | None]:
    try:
        return join(messages, since)
    except ValueError as exc:
        raise CorruptEntryError(session, messages[-1].seq or 0, str(exc)) from exc


def _number(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


def _datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)
