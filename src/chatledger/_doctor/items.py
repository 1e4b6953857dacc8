"""Doctor's check of LangGraph long-term memory: the LedgerStore items of the namespace.

Each item is a session under ``lgs/``; its newest entry must decode as an
item (a damaged or foreign entry would make every ``get`` and ``search`` that
reaches it raise ``CorruptEntryError``). Items past their expiry are counted:
reads never return them, but they hold space until a sweep
(``sweep_ttl``) cuts them. Nothing is changed.

Cost: a listing of the item sessions and one read (of the newest entry) per
item, two for an item stored in parts. Needs the ``langgraph`` extra only when
the namespace holds items.
"""

from __future__ import annotations

from .._checks import Check
from .._errors import CorruptEntryError
from .._messages import Message
from .._sync.store import Store

__all__ = ["store_items"]

_PREFIX = "lgs/"
"""Where LedgerStore keeps items (``chatledger.langgraph._item_layout.ITEM_PREFIX``,
which cannot be imported without LangGraph)."""


def store_items(store: Store) -> Check | None:
    """The items' health, or None when the namespace holds no item."""
    sessions = list(store.sessions(prefix=_PREFIX))
    if not sessions:
        return None
    try:
        from ..langgraph._item_entries import (  # noqa: PLC0415 -- an optional extra
            item_of,
            parts_wanted,
            whole_entry,
        )
        from ..langgraph._item_layout import (  # noqa: PLC0415
            item_words,
            split_item_session_id,
        )
    except ImportError as exc:
        return Check("store items", "warn", f"{len(sessions)} LangGraph store item(s) not "
                     f"checked: {exc.name or 'langgraph'} is not installed")
    now, expired, damaged, present = store.options.clock(), 0, [], 0
    for session_id in sessions:
        present += 1
        try:  # the read decodes the newest entry: one that is garbage fails it
            history = store.session(session_id).read(last=1)
            if not history.messages:
                present -= 1
                continue  # swept, or deleted while listed
            entry: Message | None = history.messages[-1]
            wanted = parts_wanted(history.messages[-1], session_id)
            if wanted is not None:  # stored in parts: one more read, for them
                parts = store.session(session_id).read(after=wanted[0], limit=wanted[1])
                entry = whole_entry(parts.messages, history.messages[-1], session_id)
            if entry is None:
                raise CorruptEntryError(session_id, history.messages[-1].seq or 0,
                                        "a part of the item's value is missing")
            expired += item_of(entry, session_id, None).expired(now)
        except CorruptEntryError as exc:
            named = split_item_session_id(session_id)  # the user's terms, not the id
            where = repr(session_id) if named is None else item_words(*named)
            damaged.append(f"{where} ({exc.reason}, seq {exc.seq})")
    if damaged:
        return Check("store items", "fail", f"{len(damaged)} of {present} LangGraph store "
                     f"item(s) cannot be read: {', '.join(damaged[:3])}", len(damaged))
    swept = f"; {expired} expired, unswept (sweep_ttl frees them)" if expired else ""
    return Check("store items", "ok", f"{present} LangGraph store item(s), each "
                 f"readable{swept}", present)
