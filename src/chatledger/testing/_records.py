"""What one worker did to one session: the records a concurrency check is made of.

Records are frozen dataclasses of plain values (and chatledger's own ``Ack``), so
they pickle across process boundaries. Times are ``time.monotonic()`` seconds,
which on one machine is one clock for every process, so operations of different
workers can be ordered: one *precedes* another when it ended before the other
started.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .._errors import ConfigError, ConflictError, InvalidMessage, MemoryLostError
from .._results import Ack

__all__ = ["AppendRecord", "Outcome", "ReadRecord", "SeenMessage", "SummaryRecord", "Window",
           "outcome_of"]

Outcome = Literal["ok", "failed", "indeterminate"]
"""``ok``: acknowledged (or read). ``failed``: refused, nothing written.
``indeterminate``: the store did not answer; an append may or may not be stored."""

# Errors after which chatledger guarantees nothing of the batch was written.
_DEFINITE = (ConflictError, InvalidMessage, MemoryLostError, ConfigError)


def outcome_of(error: BaseException) -> Outcome:
    """``failed`` for the errors that promise nothing was written, else
    ``indeterminate``: a timeout or an unknown error may have hit after the write."""
    return "failed" if isinstance(error, _DEFINITE) else "indeterminate"


def describe_error(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


@dataclass(frozen=True)
class Window:
    """The part of a session a read asked for, as ``Session.read`` takes it."""

    last: int | None = None
    after: int | None = None
    limit: int | None = None

    def covers(self, first_seq: int, version: int) -> range:
        """The seqs this read vouches for, given what the store said it holds."""
        low, high = first_seq, version
        if self.last is not None:
            low = max(low, version - self.last + 1)
        if self.after is not None:
            low = max(low, self.after + 1)
        if self.limit is not None:
            high = min(high, low + self.limit - 1)
        return range(low, high + 1)

    def __str__(self) -> str:
        asked = [f"{k}={v}" for k, v in vars(self).items() if v is not None]
        return ", ".join(asked) or "all"


@dataclass(frozen=True)
class SeenMessage:
    """One message as a read returned it: its place, id and text, and for a
    summary entry the seq it covers through (None for any other message)."""

    seq: int
    id: str | None
    text: str
    through_seq: int | None = None


@dataclass(frozen=True, kw_only=True)
class _Operation:
    session: str
    worker: int
    process: int
    index: int
    """The n-th operation this worker recorded: a worker's own order."""
    start: float
    end: float
    outcome: Outcome
    error: str | None = None

    def precedes(self, other: _Operation) -> bool:
        return self.end < other.start

    @property
    def latency(self) -> float:
        return self.end - self.start


@dataclass(frozen=True, kw_only=True)
class AppendRecord(_Operation):
    """One append of a batch. ``ack`` is the store's Ack when it was acknowledged;
    a foreign store that acknowledges without seqs leaves it None."""

    ids: tuple[str | None, ...]
    texts: tuple[str, ...]
    ack: Ack | None = None

    def __str__(self) -> str:
        return self.describe()

    def describe(self, origin: float = 0.0) -> str:
        """One line for a person; times are seconds since ``origin``."""
        where = ""
        if self.ack is not None:
            where = f" at seqs {self.ack.first_seq}-{self.ack.last_seq}"
        told = {"ok": f"acknowledged{where}", "failed": "failed",
                "indeterminate": "indeterminate"}[self.outcome]
        texts = ", ".join(repr(_short(t)) for t in self.texts)
        return (f"worker {self.worker} op #{self.index} append [{texts}] {told} "
                f"({_span(self, origin)}){_error(self)}")


@dataclass(frozen=True, kw_only=True)
class ReadRecord(_Operation):
    """One read: the window asked and what came back. ``ledger`` is None for a
    session that does not exist, or a store without ledgers. A final read, made
    after every worker stopped, has ``final`` set."""

    window: Window = Window()
    messages: tuple[SeenMessage, ...] = ()
    version: int = 0
    first_seq: int = 1
    ledger: str | None = None
    final: bool = False

    @property
    def covered(self) -> range:
        return self.window.covers(self.first_seq, self.version)

    def __str__(self) -> str:
        return self.describe()

    def describe(self, origin: float = 0.0) -> str:
        """One line for a person; times are seconds since ``origin``."""
        who = "final read" if self.final else f"worker {self.worker} op #{self.index} read"
        if self.outcome != "ok":
            return f"{who} ({self.window}) {self.outcome} ({_span(self, origin)}){_error(self)}"
        return (f"{who} ({self.window}) saw version {self.version}, "
                f"{len(self.messages)} message(s) ({_span(self, origin)})")


@dataclass(frozen=True, kw_only=True)
class SummaryRecord(_Operation):
    """One compaction: what its summarizer was given and the summary it stored.

    ``folded``: the seqs of the messages the summarizer folded (the previous
    summary aside); ``base``: the seq of the summary it was given first, the
    one it builds on (0: none); ``text``: the summary's text. ``ack``: the
    stored summary's Ack, None when nothing was stored (under the trigger,
    another summary landed meanwhile, or the store did not answer); an Ack with
    ``deduplicated`` set means another summarizer stored that entry first.
    """

    folded: tuple[int, ...] = ()
    base: int = 0
    text: str = ""
    ack: Ack | None = None

    @property
    def stored_at(self) -> int | None:
        """The seq of the summary this compaction stored itself, if it did."""
        if self.ack is None or self.ack.deduplicated:
            return None
        return self.ack.first_seq

    def __str__(self) -> str:
        return self.describe()

    def describe(self, origin: float = 0.0) -> str:
        """One line for a person; times are seconds since ``origin``."""
        folded = (f"seqs {self.folded[0]}-{self.folded[-1]} ({len(self.folded)} messages)"
                  if self.folded else "nothing")
        base = f" on the summary at seq {self.base}" if self.base else ""
        told: str = "stored nothing" if self.outcome == "ok" else self.outcome
        if self.ack is not None:
            told = ("found it stored already at seq" if self.ack.deduplicated
                    else "stored it at seq") + f" {self.ack.first_seq}"
        return (f"worker {self.worker} op #{self.index} summary of {folded}{base} {told} "
                f"({_span(self, origin)}){_error(self)}")


def _span(operation: _Operation, origin: float) -> str:
    if operation.start == float("inf"):
        return "after the run"
    return f"t={operation.start - origin:.3f}..{operation.end - origin:.3f}s"


def _error(operation: _Operation) -> str:
    return f": {operation.error}" if operation.error else ""


def _short(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
