# Generated from src/chatledger/langgraph/_async/item_copy.py by scripts/unasync.py: edit that file, not this one.
"""``copy_items``: every namespace and item of any LangGraph store into the
``LedgerStore`` given.

The source of ``_sync/item_copy.py`` (``copy_items``). The source is read
through ``BaseStore``'s API only (``batch`` of ``ListNamespacesOp`` and
``SearchOp``, paged, ``refresh_ttl=False``), plus the expiry and index fields
its tables keep when it is LangGraph's SQLite or PostgreSQL store
(``_item_sources``). Each item keeps its namespace, key, value, ``created_at``
and ``updated_at``; its expiry stays the same instant, its TTL the same number
of minutes for later refreshes. An item the target holds with the same value
and update time is left alone, so copying again stores nothing twice and
finishes a copy that stopped.

Costs one listing of the namespaces, one search page per ``page`` items of
each namespace (a namespace's search also returns its children's items, which
are skipped there: a deep tree is read more than once), and one read and at
most one append on the target per item.
"""

from __future__ import annotations

from typing import Any

from langgraph.store.base import BaseStore, ListNamespacesOp, SearchItem, SearchOp

from ..._errors import InvalidMessage
from .._copying import Progress
from .._item_copying import (
    ItemCopyReport,
    Key,
    SourceFacts,
    epoch_of,
    index_of,
    is_expired,
)
from .._item_entries import StoredItem
from .._item_layout import item_words
from .._item_sources import read_source
from .._terms import item_terms
from .item_store import LedgerStore, _user_of

__all__ = ["copy_items"]

PAGE = 500
"""Items (and namespaces) read per request of the source."""


@item_terms
def copy_items(source: BaseStore, target: LedgerStore, *,
                      dry_run: bool = False, on_progress: Progress | None = None,
                      page: int = PAGE) -> ItemCopyReport:
    """Copy every item of every namespace of ``source`` into ``target``.

    TTLs are carried where the source's tables show them (LangGraph's SQLite
    and PostgreSQL stores); from any other store items are copied without one
    (``ItemCopyReport.ttls`` says which). An item already expired on the
    source is left out. An item the target holds a later put of (the
    application wrote it on chatledger since) is left alone and reported in
    ``refused``: a copy never puts an older value over a newer one. A value the
    target refuses (one it cannot store exactly: a lone surrogate, NaN) is
    reported in ``refused`` too; the others go on. ``on_progress(namespaces
    done, namespaces in all)`` is called as each namespace ends.
    """
    if page < 1:
        raise ValueError(f"page must be at least 1, not {page}")
    facts = read_source(source)
    report = ItemCopyReport(dry_run, _ttls(source, facts))
    spaces = _namespaces(source, page)
    report.namespaces = len(spaces)
    if on_progress is not None:
        on_progress(0, len(spaces))
    for done, namespace in enumerate(spaces):
        for item in _items(source, namespace, page):
            _copy(target, item, facts, report)
        if on_progress is not None:
            on_progress(done + 1, len(spaces))
    return report


def _ttls(source: BaseStore, facts: SourceFacts | None) -> str:
    if facts is not None:
        return f"read from {facts.source}'s table (expiry and TTL of each item)"
    if not getattr(source, "supports_ttl", False):
        return f"{type(source).__name__} has none"
    return (f"{type(source).__name__} does not show them through BaseStore: "
            "items copied without a TTL")


def _namespaces(source: BaseStore, page: int) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    while True:
        [result] = source.batch([ListNamespacesOp(None, None, page, len(found))])
        listed: list[tuple[str, ...]] = result  # type: ignore[assignment]
        found += [tuple(n) for n in listed]
        if len(listed) < page:
            return sorted(set(found))


def _items(source: BaseStore, namespace: tuple[str, ...], page: int) -> Any:
    """The items of exactly ``namespace`` (its children's are skipped here)."""
    offset = 0
    while True:
        [found] = source.batch([SearchOp(namespace, None, page, offset,
                                                refresh_ttl=False)])
        items: list[SearchItem] = found  # type: ignore[assignment]
        for item in items:
            if tuple(item.namespace) == namespace:
                yield item
        if len(items) < page:
            return
        offset += page


def _copy(target: LedgerStore, item: SearchItem, facts: SourceFacts | None,
                report: ItemCopyReport) -> None:
    where: Key = (tuple(item.namespace), item.key)
    now = target.store.options.clock()
    if is_expired(facts, where, now):
        report.expired += 1
        return
    expires, ttl = facts.expiries.get(where, (None, None)) if facts else (None, None)
    value = dict(item.value)
    updated = epoch_of(item.updated_at) or 0.0
    held = target._read_item(*where)
    if held is not None and held.item.value == value and held.item.updated == updated:
        report.present += 1
        return
    if held is not None and held.item.updated >= updated:  # put on chatledger since
        report.refused.append(f"{item_words(*where)}: the target's item was put "
                              "at or after the source's last update: left alone (merge it "
                              "by hand)")
        return
    if not report.dry_run:
        created = epoch_of(item.created_at) or updated
        stored = StoredItem(value=value, updated=updated, created=created, expires=expires, ttl=ttl,
                            vectors=target._embedded(value, index_of(facts, where)))
        try:
            _append(target, where, stored)
        except InvalidMessage as exc:
            report.refused.append(f"{item_words(*where)}: {exc}")
            return
    report.copied += 1


def _append(target: LedgerStore, where: Key, stored: StoredItem) -> None:
    namespace, key = where
    session = target._session(namespace, key)
    if target.user_label is not None:
        session = target.store.session(session.id, user=_user_of(namespace, target.user_label))
    session.append(target._entries(stored, f"the value of item {key!r}"))
