"""LangGraph long-term memory: the items ``LedgerStore`` keeps in the namespace.

Each item is a session ``lgs/<label>/.../=<key>`` (``chatledger.langgraph``'s
item layout). The namespaces page lists the item sessions (ids only, no
reads) and groups them by namespace; a namespace's page reads the newest
entry of each of its items, the first :data:`ITEM_LIMIT`, and shows the
value, its times and its expiry. An item past its expiry, which no read
returns, is shown as expired, not hidden: it is still stored until a sweep.
An item whose stored entry cannot be decoded is shown as damaged, with the
reason, among the others: one bad entry does not hide its namespace.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import orjson

from .. import _core
from .._async.store import AsyncStore
from .._errors import CorruptEntryError
from .._messages import Message

if TYPE_CHECKING:
    from ..langgraph._item_entries import StoredItem

__all__ = ["ITEM_LIMIT", "DamagedItem", "ItemView", "NamespaceRow", "items_of", "namespaces"]

ITEM_LIMIT = 200
"""Items a namespace's page reads and shows: the first by key."""


@dataclass(frozen=True)
class NamespaceRow:
    labels: tuple[str, ...]
    items: int


@dataclass(frozen=True)
class ItemView:
    key: str
    value: str  # JSON, indented
    created: datetime
    updated: datetime
    expires: datetime | None
    expired: bool
    ttl: float | None
    damaged: None = None


@dataclass(frozen=True)
class DamagedItem:
    """An item whose stored entry cannot be decoded: its key, and why."""

    key: str
    damaged: str  # what is wrong with it, in the store's words
    expired: bool = False


async def namespaces(store: AsyncStore) -> list[NamespaceRow]:
    """Every namespace holding an item, with how many (one listing, no reads)."""
    from ..langgraph._item_layout import (  # noqa: PLC0415 -- needs the langgraph extra
        ITEM_PREFIX,
        split_item_session_id,
    )

    counts: Counter[tuple[str, ...]] = Counter()
    async for session_id in store.sessions(prefix=ITEM_PREFIX):
        if (split := split_item_session_id(session_id)) is not None:
            counts[split[0]] += 1
    return [NamespaceRow(labels, count) for labels, count in sorted(counts.items())]


async def items_of(store: AsyncStore, namespace: tuple[str, ...],
                   limit: int) -> tuple[list[ItemView | DamagedItem], bool]:
    """The items of exactly ``namespace``, the first ``limit`` by key; True: more."""
    from ..langgraph._item_layout import (  # noqa: PLC0415 -- needs the langgraph extra
        namespace_prefix_id,
        split_item_session_id,
    )

    ids = sorted([sid async for sid in store.sessions(prefix=namespace_prefix_id(namespace))
                  if (split_item_session_id(sid) or ((), ""))[0] == namespace])
    shown: list[ItemView | DamagedItem] = []
    for session_id in ids[:limit]:
        key = (split_item_session_id(session_id) or ((), ""))[1]
        view: ItemView | DamagedItem | None
        try:
            view = await _item_view(store, session_id, key)
        except CorruptEntryError as exc:
            view = DamagedItem(key, _core.entry_damage(exc))
        if view is not None:
            shown.append(view)
    return shown, len(ids) > limit


async def _item_view(store: AsyncStore, session_id: str, key: str) -> ItemView | None:
    """The newest entry of an item as shown; None: swept, deleted or torn since the listing."""
    from ..langgraph._item_entries import (  # noqa: PLC0415 -- needs the langgraph extra
        item_of,
        parts_wanted,
        whole_entry,
    )

    history = await store.session(session_id).read(last=1)
    if not history.messages:  # swept or deleted since the listing: left out
        return None
    entry: Message | None = history.messages[-1]
    wanted = parts_wanted(history.messages[-1], session_id)
    if wanted is not None:  # stored in parts: one more read, for them
        parts = await store.session(session_id).read(after=wanted[0], limit=wanted[1])
        entry = whole_entry(parts.messages, history.messages[-1], session_id)
    if entry is None:  # a put trimmed the parts meanwhile: left out, as if swept
        return None
    return _view(key, item_of(entry, session_id, None), store.options.clock())


def _view(key: str, item: StoredItem, now: float) -> ItemView:
    created, updated = item.times()
    expires = None if item.expires is None else _instant(item.expires)
    return ItemView(key, orjson.dumps(item.value, option=orjson.OPT_INDENT_2).decode(),
                    created, updated, expires, item.expired(now), item.ttl)


def _instant(epoch: float) -> datetime:
    """An expiry as a time; one past what a datetime holds (a century's ttl from a
    clock near the year 9999, or an item put before ttls were capped) as the last
    time it holds."""
    try:
        return datetime.fromtimestamp(epoch, tz=timezone.utc)
    except (OverflowError, ValueError, OSError):
        return datetime.max.replace(tzinfo=timezone.utc)
