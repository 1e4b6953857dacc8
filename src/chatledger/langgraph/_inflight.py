"""This saver's writes in flight per session, so that a put appends after them.

LangGraph hands a task's ``put_writes`` on checkpoint C and the ``put`` of C's
child to its executor at once (``durability="async"``). A put that appends
at the version it knows while such a write is being stored fails its
``expect_version`` and reads the ledger again: a failed append and a read,
most steps. A put first waits (up to the store's timeout) for the writes this
saver has in flight on its session; their acknowledgements move the known
version on (``heads.py``), and the put appends once. A put that had to read
the ledger (no head known: a thread's first put) watches the session while it
reads: a write of its own that ended meanwhile (LangGraph starts a task's
writes as the first put reads) makes it read again rather than append at a
version already gone. Whatever else gets in still fails the append, as
before: waiting is only to save work.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import Future, wait
from contextlib import contextmanager

from ._tokens import WriteToken, resolve

__all__ = ["InFlight", "Watch"]


class Watch:
    """Whether a write ended on a session while a put read it."""

    __slots__ = ("ended",)

    def __init__(self) -> None:
        self.ended = False


class InFlight:
    """Per session, this saver's writes being stored; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._writes: dict[str, set[WriteToken[None]]] = {}
        self._watches: dict[str, set[Watch]] = {}

    @contextmanager
    def watching(self, session: str) -> Iterator[Watch]:
        """A watch that says whether a write of this saver on ``session`` ended while
        the block ran."""
        watch = Watch()
        with self._lock:
            self._watches.setdefault(session, set()).add(watch)
        try:
            yield watch
        finally:
            with self._lock:
                watches = self._watches[session]
                watches.discard(watch)
                if not watches:
                    del self._watches[session]

    def begin(self, session: str) -> WriteToken[None]:
        token: WriteToken[None] = WriteToken()
        with self._lock:
            self._writes.setdefault(session, set()).add(token)
        return token

    def end(self, session: str, token: WriteToken[None]) -> None:
        with self._lock:
            writes = self._writes[session]  # begun, so listed until its last write ends
            writes.discard(token)
            if not writes:
                del self._writes[session]
            for watch in self._watches.get(session, ()):
                watch.ended = True
            waited = token.ended(None)
        resolve(waited, None)

    def _pending(self, session: str) -> list[Future[None]]:
        """The futures of the writes in flight on ``session``, made for a waiter."""
        with self._lock:
            return [token.waited() for token in self._writes.get(session, ())]

    def settled(self, session: str, timeout: float) -> None:
        """Wait (up to ``timeout`` in all) for the writes in flight on ``session``."""
        pending = self._pending(session)
        if pending:
            wait(pending, timeout)

    async def asettled(self, session: str, timeout: float) -> None:
        """``settled`` for a coroutine: waits without blocking the event loop."""
        pending = self._pending(session)
        if pending:
            await asyncio.wait([asyncio.wrap_future(t) for t in pending], timeout=timeout)
