# Generated from src/chatledger/langgraph/_async/ledger.py by scripts/unasync.py: edit that file, not this one.
"""One (thread, namespace) chain of checkpoints in one ledger session: the reads.

The source of ``_sync/ledger.py``. A walk reads from the newest entry back in
pages that grow (16, 64, 256, 512 entries), so finding the latest checkpoint
is one read, and a checkpoint ``k`` entries back costs O(log k + k/512) reads.
Its values are then read in one range per stretch of nearby entries: a value
not in the pages read, or a list's chain (its snapshot and the deltas after
it, see ``lists.py``), which is one stretch.
Every page after the first is pinned to the ledger the first one saw: a thread
deleted and written again mid-walk raises MemoryLostError, never mixes two.
"""

from __future__ import annotations

from collections.abc import Iterator, Callable, Collection
from dataclasses import replace
from typing import Any

from ..._sync.store import Session
from ..._errors import CorruptEntryError
from ..._messages import Message
from ..._results import Ack, History
from .._cache import ValueCache
from .._chain import Found, Walk
from .._entries import (
    CheckpointEntry,
    Entry,
    ItemsEntry,
    Typed,
    ValueEntry,
    WritesEntry,
    decode,
)
from .._lists import assemble, first_missing
from .._parts import BadParts, join

__all__ = ["CheckpointLedger"]

FIRST_PAGE = 16
SINCE_PAGE = 32
"""Entries read from a known head on (``pages``): more were stored since, by
another writer, and the newest page is read instead, one read more."""
MAX_PAGE = 512
_NEAR = 8  # values this close together are read in one range
_VALUES = frozenset({"ValueEntry", "ItemsEntry"})
_WRITES = frozenset({"WritesEntry"})


class CheckpointLedger:
    """The checkpoints of one session, newest first, and the values they point at."""

    def __init__(self, session: Session, cache: ValueCache | None = None,
                 damaged: dict[int, CorruptEntryError] | None = None) -> None:
        self.session = session
        self.cache = cache
        # Given (by a tool showing a damaged thread): an entry that does not decode
        # is kept here by its seq and left out of what is read, where a read raises.
        self.damaged = damaged
        self.version = 0
        self.ledger: str | None = None
        self.first_seq = 0

    def pages(self, since: int | None = None) -> Iterator[list[Entry]]:
        """Pages of entries, newest first; sets ``version`` and ``ledger`` from the first.

        ``since``: the seq from which the caller expects to find what it looks
        for (the head it knows): the first page is then every entry from there
        on, when they are fewer than ``SINCE_PAGE``, not the newest page whole.
        Any newest entries make a page (what the walk misses there, the pages
        after it hold), so a wrong guess costs reads, never a wrong answer.
        Not on a trimmed session: there the newest page is read whole, so that
        an entry whose first parts were cut is met, and loud (``parts.py``).
        """
        history = self._first_page(since)
        self.version, self.ledger = history.version, history.ledger
        self.first_seq = history.first_seq
        size = FIRST_PAGE
        while True:
            yield (self._entries(history))[::-1]
            low = history.messages[0].seq if history.messages else history.first_seq
            if low is None or low <= history.first_seq:
                return
            size = min(size * 4, MAX_PAGE)
            start = max(history.first_seq, low - size)
            history = self._read(after=start - 1, limit=low - start,
                                       ledger=self.ledger, min_version=self.version)

    def _first_page(self, since: int | None) -> History:
        if since is not None:
            history = self._read(after=since - 1, limit=SINCE_PAGE)
            if history.messages and len(history.messages) < SINCE_PAGE and (
                    history.first_seq <= 1):
                return history  # every entry from ``since`` on
        return self._read(last=FIRST_PAGE)

    def walk(self) -> Walk:
        """A walk that judges expiry by the store's ttl and clock, as of now."""
        options = self.session.store.options
        return Walk(ttl=options.ttl, now=options.clock())

    def find(self, match: Callable[[Found], bool], walk: Walk,
                   since: int | None = None) -> Found | None:
        """The newest live checkpoint that ``match`` accepts, with its writes
        (``since``: see ``pages``)."""
        for page in self.pages(since):
            for found in walk.feed(page):
                if match(found):
                    return found
            if walk.ended:
                return None
        return None

    def chain(self, checkpoint_id: str | None, walk: Walk) -> Iterator[Found]:
        """The live checkpoint ``checkpoint_id`` (None: the latest), then its
        ancestors by their parent ids, newest first: a parent is always stored
        before its children, so one walk back finds them all."""
        want, started = checkpoint_id, False
        for page in self.pages():
            for found in walk.feed(page):
                if found.entry.checkpoint_id == want or (want is None and not started):
                    started = True
                    yield found
                    want = found.entry.parent_id
                    if want is None:
                        return
            if walk.ended:
                return

    def values(self, entry: CheckpointEntry, walk: Walk,
                     channels: Collection[str] | None = None) -> dict[str, Typed | list[Typed]]:
        """The channel values of ``entry`` (a list's as its items; only
        ``channels``, if given): from what the walk saw, else read, in one
        range per stretch of the ledger they lie in."""
        heads = {ch: s for ch, s in entry.value_seqs().items()
                 if s is not None and (channels is None or ch in channels)}
        snaps = {ch: chain.snap for ch, chain in entry.resolved_chains().items()
                 if chain.snap is not None}
        cached = {} if self.cache is None else self.cache.get(self.session.id, self.ledger)
        if cached:  # what an earlier call decoded: read only what is newer
            if min(cached) < self.first_seq:  # a trimmed entry is gone, whatever we remember
                cached = {seq: e for seq, e in cached.items() if seq >= self.first_seq}
            walk.values.update({**cached, **walk.values})  # the walk's own entries first
        for narrow in (True, False):
            wanted = _wanted(heads, snaps, walk.values, narrow)
            for low, high in _ranges(wanted):
                history = self._read(after=low - 1, limit=high - low + 1,
                                           ledger=self.ledger)
                walk.values.update((e.seq, e) for e in self._entries(history, _VALUES)
                                   if isinstance(e, (ValueEntry, ItemsEntry)))
            if not wanted:
                break
        if self.cache is not None and channels is None:
            self.cache.hold(self.session.id, self.ledger, entry, walk.values, cached)
        values = {ch: _value(head, walk.values) for ch, head in heads.items()}
        for ch, value in values.items():
            if value is None:  # loud: a checkpoint whose value is gone is not "no value"
                raise CorruptEntryError(self.session.id, heads[ch], f"the value of channel "
                                        f"{ch!r} of checkpoint seq {entry.seq} is missing")
        return {ch: value for ch, value in values.items() if value is not None}

    def writes(self, found: Found) -> list[WritesEntry]:
        """Every write on ``found``'s checkpoint, oldest first: the walk's, and
        those stored before the checkpoint that the walk did not reach (one read)."""
        if not found.missing:
            return found.writes
        low, high = min(found.missing), max(found.missing)
        history = self._read(after=low - 1, limit=high - low + 1,
                                   ledger=self.ledger)
        wanted = set(found.missing)
        read = [e for e in self._entries(history, _WRITES) if isinstance(e, WritesEntry)
                and e.seq in wanted and e.checkpoint_id == found.entry.checkpoint_id]
        if len(read) != len(wanted):
            raise CorruptEntryError(self.session.id, found.entry.seq, "writes stored before "
                                    f"checkpoint seq {found.entry.seq} are missing")
        return sorted(found.writes + read, key=lambda w: w.seq)

    def append(self, messages: list[Message], *, expect_version: int | None = None,
                     ledger: str | None = None) -> Ack:
        """Store entries this package encoded (``entries.encode``): trusted, not walked
        field by field as a user's messages are (``Session._append_own``)."""
        return self.session._append_own(messages, expect_version=expect_version,
                                              ledger=ledger)

    def _entries(self, history: History,
                       kinds: frozenset[str] | None = None) -> list[Entry]:
        """The entries of a window (of ``kinds`` only, if given), whole: an entry
        whose parts (``parts.py``) lie before the window costs one more read."""
        messages = history.messages
        whole, lacking = self._joined(messages)
        if lacking is not None and messages:
            low = messages[0].seq or 0
            before = self._read(after=lacking - 1, limit=low - lacking,
                                      ledger=self.ledger)
            whole, lacking = self._joined(before.messages + messages, low)
            if lacking is not None:
                raise CorruptEntryError(self.session.id, lacking, "a part of a checkpoint "
                                        "ledger entry is missing")
        if kinds is not None:  # a range read for values decodes nothing else
            whole = [m for m in whole if m.metadata.get("kind") in kinds]
        entries = ((decode(self.session.id, m) for m in whole) if self.damaged is None
                   else map(self._kept_damaged, whole))
        return [e for e in entries if e is not None]

    def _kept_damaged(self, message: Message) -> Entry | None:
        """``message`` decoded; one that does not decode is kept in ``damaged``: None."""
        try:
            return decode(self.session.id, message)
        except CorruptEntryError as exc:
            if self.damaged is None:
                raise
            self.damaged[exc.seq] = exc
            return None

    def _read(self, *, last: int | None = None, after: int | None = None,
                    limit: int | None = None, **pins: Any) -> History:
        """The session's read; keeping ``damaged``, a window is read around each entry
        that does not decode (the entries after it, then those before it), one read
        more per damaged entry, so that it hides none of the others."""
        try:
            return self.session.read(last=last, after=after, limit=limit, **pins)
        except CorruptEntryError as exc:
            if self.damaged is None:
                raise
            self.damaged[exc.seq] = exc
            damaged = exc.seq
        end = None if after is None or limit is None else after + limit  # the window's last seq
        newer = self._read(after=damaged, limit=None if end is None else end - damaged,
                                 **pins)
        start = newer.version - last + 1 if last is not None else (after or 0) + 1
        older = self._read(after=start - 1, limit=max(0, damaged - start), **pins)
        return replace(newer, messages=[*older.messages, *newer.messages])

    def _joined(self, messages: list[Message],
                since: int = 0) -> tuple[list[Message], int | None]:
        try:
            return join(messages, since)
        except BadParts as exc:
            raise CorruptEntryError(self.session.id, exc.seq, str(exc)) from exc


def _value(head: int, values: dict[int, ValueEntry | ItemsEntry]) -> Typed | list[Typed] | None:
    entry = values.get(head)
    if isinstance(entry, ItemsEntry):
        return assemble(head, values)
    return None if entry is None else entry.value


def _wanted(heads: dict[str, int], snaps: dict[str, int],
            values: dict[int, ValueEntry | ItemsEntry], narrow: bool) -> list[tuple[int, int]]:
    """The seq ranges to read for the values at ``heads`` that ``values`` lacks.

    A list's chain lies between its snapshot and its head. ``narrow``: from
    just after the newest delta of that list already known below what is
    missing (the deltas an earlier call decoded), else from the snapshot.
    """
    wanted: list[tuple[int, int]] = []
    for ch, head in heads.items():
        if ch not in snaps:
            if head not in values:
                wanted.append((head, head))
            continue
        missing = first_missing(head, values)
        if missing is None:
            continue
        low = min(snaps[ch], missing)
        if narrow:
            low = max([low] + [seq + 1 for seq, known in values.items() if low <= seq < missing
                               and isinstance(known, ItemsEntry) and known.channel == ch])
        wanted.append((low, missing))
    return wanted


def _ranges(wanted: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Seq ranges merged where they overlap or their gaps are small enough to read through."""
    ranges: list[tuple[int, int]] = []
    for low, high in sorted(wanted):
        if ranges and low - ranges[-1][1] <= _NEAR:
            ranges[-1] = (ranges[-1][0], max(high, ranges[-1][1]))
        else:
            ranges.append((low, high))
    return ranges
