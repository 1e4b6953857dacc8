"""Copying store items from another LangGraph store: the rules and the report, no I/O.

``copy_items`` (``_async/item_copy.py`` and its generated twin) reads every
namespace of the source (``list_namespaces``, paged) and every item of each
(``search``, paged, ``refresh_ttl=False`` so the copy extends no TTL), and
stores what the target lacks. ``BaseStore``'s API shows neither an item's
expiry nor the fields it was indexed on: for LangGraph's SQLite and PostgreSQL
stores they are read from their tables (``_item_sources``), for any other
store they are unknown (:class:`SourceFacts` is None) and the items are
copied without a TTL, on the target's default index fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

__all__ = ["ItemCopyReport", "Key", "SourceFacts", "epoch_of", "index_of", "is_expired"]

Key = tuple[tuple[str, ...], str]
"""``(namespace, key)``: an item in its store."""


@dataclass(frozen=True)
class SourceFacts:
    """What a source's tables say beside the items ``BaseStore`` returns.

    ``expiries``: the items with a TTL, as (expiry in epoch seconds, TTL in
    minutes). ``fields``: when the source has an index, the fields each item
    was embedded on (an item absent was put with ``index=False``); None when
    it has no index.
    """

    source: str
    expiries: dict[Key, tuple[float | None, float | None]]
    fields: dict[Key, list[str]] | None = None


def epoch_of(at: Any) -> float | None:
    """Epoch seconds of a time a source gives: a datetime, or the text SQLite
    keeps; naive means UTC, as LangGraph's SQLite store writes it."""
    if at is None:
        return None
    when = at if isinstance(at, datetime) else datetime.fromisoformat(str(at))
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def is_expired(facts: SourceFacts | None, item: Key, now: float) -> bool:
    """Whether the source's tables say ``item`` expired (a store that returns
    expired items between sweeps, as SqliteStore does, still lists it)."""
    expires = facts.expiries.get(item, (None, None))[0] if facts else None
    return expires is not None and expires <= now


def index_of(facts: SourceFacts | None, item: Key) -> list[str] | bool | None:
    """The ``index`` the target's put takes: the source's fields for the item,
    False when the source indexed it on none, None (the target's default) when
    the source's index is unknown."""
    if facts is None or facts.fields is None:
        return None
    return facts.fields.get(item) or False


@dataclass
class ItemCopyReport:
    """What ``copy_items`` did (in a dry run: would do).

    ``ttls`` says where the items' expiries came from, or that the source
    does not expose them.
    """

    dry_run: bool
    ttls: str = ""
    namespaces: int = 0
    copied: int = 0  # stored now
    present: int = 0  # held already, with the same value and update time
    expired: int = 0  # expired on the source, not copied
    refused: list[str] = field(default_factory=list)  # "namespace (...) key ...: why"

    @property
    def ok(self) -> bool:
        return not self.refused

    def summary(self) -> str:
        """The report for a person, one fact a line."""
        verb = "would copy" if self.dry_run else "copied"
        lines = [f"{self.namespaces:,} namespace(s) found",
                 f"{verb} {self.copied:,} item(s); {self.present:,} already in chatledger; "
                 f"{self.expired:,} expired on the source, left out",
                 f"TTLs: {self.ttls}"]
        if self.refused:
            lines.append(f"{len(self.refused):,} item(s) not copied:")
            lines.extend(f"  {why}" for why in self.refused)
        return "\n".join(lines)
