"""List values that grow: stored as the items appended since the previous version.

A LangGraph ``messages`` channel (the ``add_messages`` reducer) gets one or two
messages longer at every step; stored whole at each version, a thread of n
messages costs O(n) bytes per step. A channel whose value is a ``list`` is
therefore stored item by item (each item as the serializer makes it), and a
new version whose first items are, byte for byte, the previous version's items
is stored as a **delta**: only the new items, and the seq of the entry it
continues. Anything else (an edited or removed item, ``RemoveMessage``, a
shorter list, a value that is no longer a list) is stored whole: a
**snapshot**.

When to start over with a snapshot: once the deltas since the last snapshot
would hold more than ``DELTA_SHARE`` of the snapshot's bytes. So each
snapshot is ``1 + DELTA_SHARE`` times the last or more, and all snapshots
together hold at most ``(1 + DELTA_SHARE) / DELTA_SHARE`` times the list
(3x at 0.5): amortized, a step stores its new items plus at most that many
times their bytes again, however long the thread. A read gathers the
snapshot and the deltas after it, all within one stretch of the ledger (from
the snapshot to the latest delta), read in one range.

"The previous items are a prefix" is decided without reading them: each
version's ``Chain`` (in its checkpoint entry) records its length and a digest
of its items, which the new value's first items must reproduce. The digest is
chained, item after item, so a version's digest extends its previous one's
with only the new items; and where the saver still holds the previous
version's items (``_cache.py``), they are compared byte for byte instead of
hashing the prefix: a step costs hashing its new items, not the whole list.
(A chain recorded before digests were chained never matches one: it gets a
snapshot, once.)
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter

from ._entries import Chain, ItemsEntry, Typed, ValueEntry

__all__ = ["DELTA_SHARE", "ItemList", "Items", "Stored", "assemble", "first_missing",
           "msgpack_array", "plan"]

ItemList = list[Typed]
"""A list value as read back: its serialized items."""

DELTA_SHARE = 0.5
"""Deltas may hold this share of their snapshot's bytes before the next snapshot."""

_ITEM_OVERHEAD = 8  # what an item costs beyond its bytes, so that empty items count too


class Items:
    """A list value as serialized items, with the digests of its prefixes."""

    def __init__(self, items: Sequence[Typed]) -> None:
        self.items = list(items)
        self._digests: dict[int, str] = {0: _EMPTY}

    def __len__(self) -> int:
        return len(self.items)

    def digest(self, count: int) -> str:
        """The digest of the first ``count`` items (``count`` <= ``len(self)``),
        from the longest prefix whose digest is known."""
        start = max(n for n in self._digests if n <= count)
        digest = self._digests[start]
        for kind, data in self.items[start:count]:
            digest = _chained(digest, kind, data)
        self._digests[count] = digest
        return digest

    def starts_with(self, previous: Chain, items: Sequence[Typed] | None) -> bool:
        """Whether the first items are those of the version ``previous`` describes
        (``items``: that version's items, when known; else its digest decides)."""
        if items is not None and len(items) == previous.items:
            if self.items[:previous.items] != list(items):
                return False
            self._digests[previous.items] = previous.digest  # the same items: the same digest
            return True
        return self.digest(previous.items) == previous.digest


def _chained(digest: str, kind: str, data: bytes) -> str:
    """The digest of a prefix, extended by one item."""
    hasher = hashlib.sha256(digest.encode("ascii"))
    for part in (kind.encode("utf-8", "surrogatepass"), data):
        hasher.update(len(part).to_bytes(8, "big"))
        hasher.update(part)
    return hasher.hexdigest()[:32]


_EMPTY = hashlib.sha256(b"chatledger list").hexdigest()[:32]


@dataclass(frozen=True)
class Stored:
    """What one version of a list stores: ``items`` after the entry at seq
    ``prev`` (None: the whole list), and the chain its checkpoint records."""

    items: list[Typed]
    prev: int | None
    chain: Chain


def size(items: Sequence[Typed]) -> int:
    return sum(len(kind) + len(data) + _ITEM_OVERHEAD for kind, data in items)


def plan(value: Items, previous: Chain | None, head: int | None,
         known: Mapping[int, ValueEntry | ItemsEntry] | None = None) -> Stored:
    """How to store ``value``, the new version of a list whose previous version
    is stored at seq ``head`` with chain ``previous`` (snapshot seq absolute;
    None, None: there is no previous version stored as items). ``known``:
    entries at their seqs that may hold the previous version's items."""
    count = len(value)
    if previous is not None and head is not None and previous.items <= count:
        new = value.items[previous.items:]
        added = size(new)
        before = assemble(head, known) if known else None
        if (previous.delta_bytes + added <= DELTA_SHARE * previous.snap_bytes
                and value.starts_with(previous, before)):
            chain = Chain(previous.snap, count, value.digest(count), previous.snap_bytes,
                          previous.delta_bytes + added)
            return Stored(new, head, chain)
    return Stored(value.items, None, Chain(None, count, value.digest(count), size(value.items), 0))


def first_missing(head: int, values: Mapping[int, ValueEntry | ItemsEntry]) -> int | None:
    """The newest seq of the chain ending at ``head`` that ``values`` lacks (None: none)."""
    seq: int | None = head
    while seq is not None:
        entry = values.get(seq)
        if not isinstance(entry, ItemsEntry):
            return seq
        seq = entry.prev
    return None


def assemble(head: int, values: Mapping[int, ValueEntry | ItemsEntry]) -> list[Typed] | None:
    """The items of the list stored at ``head``: its snapshot's, then each delta's.

    None when an entry of the chain is not in ``values``.
    """
    parts: list[list[Typed]] = []
    seq: int | None = head
    while seq is not None:
        entry = values.get(seq)
        if not isinstance(entry, ItemsEntry):
            return None
        parts.append(entry.items)
        seq = entry.prev
    return [item for part in reversed(parts) for item in part]


def msgpack_array(items: Sequence[Typed]) -> Typed | None:
    """The items as one msgpack array, when each is one msgpack value: read back
    in one call, as a saver that stores the whole list reads it (None otherwise)."""
    count = len(items)
    # map and itemgetter, not a loop per item: a get_tuple joins every message's bytes.
    if count and set(map(_KIND, items)) != _MSGPACK:
        return None
    if count < 16:
        header = bytes([0x90 | count])
    elif count < 1 << 16:
        header = b"\xdc" + count.to_bytes(2, "big")
    else:
        header = b"\xdd" + count.to_bytes(4, "big")
    return "msgpack", b"".join([header, *map(_DATA, items)])


_KIND, _DATA = itemgetter(0), itemgetter(1)
_MSGPACK = {"msgpack"}
