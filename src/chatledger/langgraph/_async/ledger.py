"""One (thread, namespace) chain of checkpoints in one ledger session: the reads.

The source of ``_sync/ledger.py``. A walk reads from the newest entry back in
pages that grow (16, 64, 256, 512 entries), so finding the latest checkpoint
is one read, and a checkpoint ``k`` entries back costs O(log k + k/512) reads.
Every page after the first is pinned to the ledger the first one saw: a thread
deleted and written again mid-walk raises MemoryLostError, never mixes two.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence

from ..._async.store import AsyncSession
from ...messages import Message
from ...results import Ack, History
from ..chain import Found, Walk
from ..entries import CheckpointEntry, Entry, Typed, decode

__all__ = ["AsyncCheckpointLedger"]

FIRST_PAGE = 16
MAX_PAGE = 512
_NEAR = 8  # values this close together are read in one range


class AsyncCheckpointLedger:
    """The checkpoints of one session, newest first, and the values they point at."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session
        self.version = 0
        self.ledger: str | None = None

    async def pages(self) -> AsyncIterator[list[Entry]]:
        """Pages of entries, newest first; sets ``version`` and ``ledger`` from the first."""
        history = await self.session.read(last=FIRST_PAGE)
        self.version, self.ledger = history.version, history.ledger
        size = FIRST_PAGE
        while True:
            yield self._decoded(history)[::-1]
            low = history.messages[0].seq if history.messages else history.first_seq
            if low is None or low <= history.first_seq:
                return
            size = min(size * 4, MAX_PAGE)
            start = max(history.first_seq, low - size)
            history = await self.session.read(after=start - 1, limit=low - start,
                                              ledger=self.ledger, min_version=self.version)

    def walk(self) -> Walk:
        """A walk that judges expiry by the store's ttl and clock, as of now."""
        options = self.session.store.options
        return Walk(ttl=options.ttl, now=options.clock())

    async def find(self, match: Callable[[Found], bool], walk: Walk) -> Found | None:
        """The newest live checkpoint that ``match`` accepts, with its writes."""
        async for page in self.pages():
            for found in walk.feed(page):
                if match(found):
                    return found
            if walk.ended:
                return None
        return None

    async def values(self, entry: CheckpointEntry, walk: Walk) -> dict[str, Typed]:
        """The channel values of ``entry``: from what the walk saw, else read."""
        seqs = {ch: s for ch, s in entry.value_seqs().items() if s is not None}
        missing = sorted({s for s in seqs.values() if s not in walk.values})
        for low, high in _ranges(missing):
            history = await self.session.read(after=low - 1, limit=high - low + 1,
                                              ledger=self.ledger)
            walk.feed(self._decoded(history))
        return {ch: walk.values[s].value for ch, s in seqs.items() if s in walk.values}

    async def append(self, messages: Sequence[Message], *, expect_version: int | None = None,
                     ledger: str | None = None) -> Ack:
        return await self.session.append(messages, expect_version=expect_version, ledger=ledger)

    def _decoded(self, history: History) -> list[Entry]:
        entries = (decode(self.session.id, m) for m in history.messages)
        return [e for e in entries if e is not None]


def _ranges(seqs: list[int]) -> list[tuple[int, int]]:
    """Sorted seqs grouped into ranges whose gaps are small enough to read through."""
    ranges: list[tuple[int, int]] = []
    for seq in seqs:
        if ranges and seq - ranges[-1][1] <= _NEAR:
            ranges[-1] = (ranges[-1][0], seq)
        else:
            ranges.append((seq, seq))
    return ranges

