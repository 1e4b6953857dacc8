# Generated from src/chatledger/langgraph/_async/lease.py by scripts/unasync.py: edit that file, not this one.
"""A thread's lease, taken, kept and released in its root namespace session.

The source of ``_sync/lease.py``. What a lease is and why it lives beside the
checkpoints: ``runs.py``. Each operation reads back from the newest entry to
the newest lease entry (one read while the thread is at rest, as the last
run's release is the newest entry), then appends one entry with
``expect_version`` at the version read: a conflict means something was
stored meanwhile, so it reads again.
"""

from __future__ import annotations

import secrets

from ..._errors import ConflictError, MemoryLostError
from ..._results import Ack
from .._entries import Lease, encode
from .._runs import RunToken, holding
from .ledger import CheckpointLedger

__all__ = ["ThreadLease"]

ATTEMPTS = 64
"""Appends an operation tries while the thread's session moves on under it
(the holder's own writes, other runs taking it)."""


class ThreadLease:
    """The lease on one thread, for one run (``run``: its id, in its entries)."""

    def __init__(self, ledger: CheckpointLedger, run: str) -> None:
        self.ledger = ledger
        self.run = run
        self.clock = ledger.session.store.options.clock

    def latest(self) -> Lease | None:
        """The newest lease entry of the thread (None: it was never taken)."""
        for page in self.ledger.pages():
            for entry in page:
                if isinstance(entry, Lease):
                    return entry
        return None

    def take(self, seconds: float) -> RunToken | Lease:
        """This run's token, or the entry of the run holding the thread."""
        for _ in range(ATTEMPTS):
            held = holding(self.latest(), self.clock())
            if held is not None:
                return held
            ack = self._append(None, seconds, "take")
            if ack is not None:
                return RunToken(ack.last_seq, ack.ledger)
        raise ConflictError(self.ledger.session.id, self.ledger.version, self.ledger.version)

    def keep(self, token: RunToken, seconds: float) -> bool:
        """Extend this run's lease to ``seconds`` from now; False once it lost the thread."""
        return self._again(token, seconds, "keep")

    def release(self, token: RunToken) -> bool:
        """Free the thread; False when this run had lost it already."""
        return self._again(token, None, "free")

    def _again(self, token: RunToken, seconds: float | None, what: str) -> bool:
        for _ in range(ATTEMPTS):
            latest = self.latest()
            if (latest is None or latest.holder != token.seq or latest.until is None
                    or self.ledger.ledger != token.ledger):
                return False
            if self._append(token.seq, seconds, what) is not None:
                return True
        return False

    def _append(self, token: int | None, seconds: float | None,
                      what: str) -> Ack | None:
        """Append a lease entry at the version last read; None on a conflict."""
        until = None if seconds is None else self.clock() + seconds
        entry = Lease(self.run, token, until)
        message = encode(entry, f"r/{self.run}/{what}/{secrets.token_hex(8)}")
        try:
            return self.ledger.append([message], expect_version=self.ledger.version,
                                            ledger=self.ledger.ledger)
        except (ConflictError, MemoryLostError):
            return None
