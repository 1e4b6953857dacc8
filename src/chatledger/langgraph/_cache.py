"""The value entries of each namespace's latest state, kept decoded between calls.

``get_tuple`` of the latest checkpoint needs every entry its values lie in: a
list's snapshot and every delta since, hundreds of entries on a long thread,
each read and decoded again on every call although only the last step's are
new. An entry of an append-only ledger never changes once stored, so an entry
known by (session, ledger id, seq) may be kept and used again: a session
deleted, expired or lost and written again has another ledger id (a new one
when it is created), and trimming only removes entries, never changes one.

Per session the cache holds what one checkpoint's values need (the one this
saver last stored or read whole) and no more, so it is bounded by the size of
a state, and sessions are dropped, least recently used first, past ``BUDGET``
bytes or ``LIMIT`` sessions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ._entries import CheckpointEntry, ItemsEntry, ValueEntry
from ._held import SessionLRU

__all__ = ["BUDGET", "LIMIT", "ValueCache"]

ValueEntries = Mapping[int, ValueEntry | ItemsEntry]

BUDGET = 256 * 1024 * 1024
"""Bytes of values kept, over every session."""

LIMIT = 1024
"""Sessions kept at once."""


@dataclass(frozen=True)
class _Held:
    ledger: str
    entries: dict[int, ValueEntry | ItemsEntry]
    sizes: dict[int, int]  # per seq: an entry never changes, nor does its size
    size: int
    checkpoint: int  # the seq of the checkpoint whose values these are


class ValueCache(SessionLRU[_Held]):
    """Per session, the decoded value entries of its latest known state; thread-safe."""

    def __init__(self, budget: int = BUDGET) -> None:
        super().__init__(budget, LIMIT)

    def get(self, session: str, ledger: str | None) -> ValueEntries:
        """The entries kept for ``session`` in ``ledger`` (none for another ledger)."""
        with self._lock:
            held = self._held.get(session)
            if held is None or held.ledger != ledger:
                return {}
            self._held.move_to_end(session)
            return held.entries

    def hold(self, session: str, ledger: str | None, checkpoint: CheckpointEntry,
             entries: ValueEntries, got: ValueEntries | None = None) -> None:
        """Keep, of ``entries`` and those kept already, what ``checkpoint``'s values need.

        ``got``: what ``get`` returned for this checkpoint's read; when that is
        still what is kept, for this checkpoint, and the read added nothing to
        it, it is kept as it is (the usual ``get_tuple`` of the head a put stored:
        no walk of a list's chain again).
        """
        if ledger is None:
            return
        with self._lock:
            held = self._held.get(session)
            if (held is not None and got is not None and held.entries is got
                    and held.checkpoint == checkpoint.seq and entries.keys() <= got.keys()):
                return
            old = held.sizes if held is not None and held.ledger == ledger else {}
        known = {**self.get(session, ledger), **entries}
        needed = _needed(checkpoint, known)
        sizes = {seq: old.get(seq) or _size(entry) for seq, entry in needed.items()}
        size = sum(sizes.values())
        with self._lock:
            self._store(session, _Held(ledger, needed, sizes, size, checkpoint.seq))


def _needed(checkpoint: CheckpointEntry,
            known: ValueEntries) -> dict[int, ValueEntry | ItemsEntry]:
    """The entries of ``known`` that ``checkpoint``'s values lie in: each value's
    entry, and for a list the deltas and snapshot before it, as far as known."""
    needed: dict[int, ValueEntry | ItemsEntry] = {}
    for head in checkpoint.value_seqs().values():
        seq = head
        while seq is not None and seq not in needed:
            entry = known.get(seq)
            if entry is None:
                break
            needed[seq] = entry
            seq = entry.prev if isinstance(entry, ItemsEntry) else None
    return needed


def _size(entry: ValueEntry | ItemsEntry) -> int:
    if isinstance(entry, ItemsEntry):
        return sum(len(data) + 64 for _, data in entry.items) + 64
    return len(entry.value[1]) + 64
