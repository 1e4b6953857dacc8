"""The latest checkpoint of each namespace, as this saver last stored or read it.

A ``put`` must know its namespace's latest checkpoint (its parent, for the
values it carries and the conflict check) and the session's version (for the
append's ``expect_version``). LangGraph's loop reads the thread (``get_tuple``)
and then puts a checkpoint per step, writing between puts, all through one
saver: the saver already knows what the read would say. So a put first tries
with what it knows, and reads only when that append fails because something
else was stored since (another writer, a sweep, a prune): ``expect_version``
decides, so a stale memory costs one failed append, never a wrong checkpoint.

The version known after this saver's own ``put_writes`` moves on only when
the write's acknowledged version is exactly the known one plus the messages
it appended: nothing else got in between. LangGraph stores two tasks' writes
at once, so their acknowledgements can arrive in either order: one that lands
past a gap is held (``ahead``) until this saver's own write fills the gap, and
one the known version already counts (a put acknowledged after it) changes
nothing. A gap no write of ours fills keeps the version where it was: the
next put's append fails and reads, as when anything else was stored.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

from .._results import Ack
from ._entries import CheckpointEntry

__all__ = ["Head", "Heads"]

LIMIT = 1024
"""Namespaces remembered at once."""


@dataclass(frozen=True)
class Head:
    """A namespace's latest checkpoint (its seq set), and the session as it was then."""

    entry: CheckpointEntry
    version: int
    ledger: str | None
    swept: float | None
    ahead: frozenset[tuple[int, int]] = frozenset()
    """This saver's own appends past ``version`` with a gap before them: (from, to)."""

    def moved(self, low: int, high: int) -> Head:
        """The head once versions ``low`` (exclusive) to ``high`` are known to be
        this saver's appends of no checkpoint."""
        if high <= self.version:  # counted already
            return self
        if low <= self.version and not self.ahead:  # the usual write: right after the head
            return Head(self.entry, high, self.ledger, self.swept)
        ahead = self.ahead | {(low, high)}
        if low > self.version:
            return Head(self.entry, self.version, self.ledger, self.swept, ahead)
        version = self.version
        while (step := next((h for lo, h in ahead if lo <= version < h), None)) is not None:
            version = step
        # Built directly, not with dataclasses.replace: this runs at every put_writes.
        return Head(self.entry, version, self.ledger, self.swept,
                    frozenset(a for a in ahead if a[1] > version))


class Heads:
    """Per session: the last known head, bounded, safe to share between threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: OrderedDict[str, Head] = OrderedDict()

    def get(self, session: str) -> Head | None:
        with self._lock:
            return self._known.get(session)

    def remember(self, session: str, head: Head) -> None:
        with self._lock:
            old = self._known.get(session)
            if old is not None and old.ahead and old.ledger == head.ledger:
                for low, high in old.ahead:  # writes acknowledged before this put
                    head = head.moved(low, high)
            self._known[session] = head
            self._known.move_to_end(session)
            while len(self._known) > LIMIT:
                self._known.popitem(last=False)

    def appended(self, session: str, ack: Ack, count: int) -> None:
        """This saver appended ``count`` messages that are no checkpoint."""
        with self._lock:
            head = self._known.get(session)
            if head is None:
                return
            if ack.ledger != head.ledger or (ack.deduplicated and ack.version > head.version):
                del self._known[session]  # another ledger, or a version we cannot place
            elif not ack.deduplicated:
                self._known[session] = head.moved(ack.version - count, ack.version)

    def forget(self, prefix: str) -> None:
        """Forget every session whose id starts with ``prefix`` (a thread changed whole)."""
        with self._lock:
            for session in [s for s in self._known if s.startswith(prefix)]:
                del self._known[session]
