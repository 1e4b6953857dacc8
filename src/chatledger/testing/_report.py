"""What ``check_history`` found: anomalies a person can act on, and the run's figures."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from ._recorder import Record

__all__ = ["KINDS", "Anomaly", "Figures", "HistoryReport", "Kind", "Latency"]

Kind = Literal["lost", "misplaced", "duplicate", "torn", "reordered", "read_backwards",
               "other_session", "ledger_changed", "phantom", "uncovered", "covered_twice",
               "summary_cursor"]

KINDS: dict[str, str] = {
    "lost": "an acknowledged message is missing from a later read",
    "misplaced": "an acknowledged message was read at another seq than its Ack's",
    "duplicate": "one message stored twice",
    "torn": "a batch's messages are not contiguous and in order",
    "reordered": "a worker's acknowledged batches are stored out of its own order",
    "read_backwards": "a read saw a lower version than an operation that ended before it",
    "other_session": "a read returned a message appended to another session",
    "ledger_changed": "the session's ledger changed: what it held was lost or replaced",
    "phantom": "a message whose append failed (nothing written) was stored",
    "uncovered": "a message in no summary of the live chain and not in the window after "
                 "the latest summary",
    "covered_twice": "a message folded into two summaries of the live chain, or into one "
                     "and still in the window",
    "summary_cursor": "a summary covering seqs past its own, or not past the summary it "
                      "builds on",
}

# Past this many anomalies of one kind, the report says how many more there are.
_SHOWN_PER_KIND = 10


@dataclass(frozen=True)
class Anomaly:
    """One broken promise: where it is and which operations show it."""

    kind: Kind
    session: str
    seqs: tuple[int, ...]
    detail: str
    operations: tuple[Record, ...]

    def describe(self, origin: float = 0.0) -> str:
        where = f" at seq {', '.join(map(str, self.seqs))}" if self.seqs else ""
        lines = [f"{self.kind}: session {self.session!r}{where}: {self.detail}"]
        lines += [f"    {operation.describe(origin)}" for operation in self.operations]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()


@dataclass(frozen=True)
class Latency:
    """Nearest-rank percentiles of successful operations, in seconds."""

    count: int
    p50: float
    p90: float
    p99: float
    max: float

    @classmethod
    def of(cls, seconds: list[float]) -> Latency:
        ranked = sorted(seconds)
        if not ranked:
            return cls(0, 0.0, 0.0, 0.0, 0.0)

        def rank(p: int) -> float:
            return ranked[max(0, math.ceil(len(ranked) * p / 100) - 1)]

        return cls(len(ranked), rank(50), rank(90), rank(99), ranked[-1])

    def __str__(self) -> str:
        ms = [f"{value * 1000:.2f}" for value in (self.p50, self.p90, self.p99, self.max)]
        return "p50 {} ms, p90 {} ms, p99 {} ms, max {} ms".format(*ms)


@dataclass(frozen=True)
class Figures:
    """Counts and timings of a checked history (what ``chatledger verify`` prints)."""

    appends: int
    appends_acknowledged: int
    appends_failed: int
    appends_indeterminate: int
    appends_lost: int
    appends_duplicated: int
    appends_torn: int
    reads: int
    reads_failed: int
    reads_backwards: int
    longest_unavailability: float
    """The longest span covered by overlapping indeterminate operations, in seconds."""
    duration: float
    appends_per_second: float
    """Acknowledged appends per second of the run."""
    reads_per_second: float
    append_latency: Latency
    read_latency: Latency
    summaries: int = 0
    """Recorded compactions whose summarizer ran."""
    summaries_stored: int = 0
    """Of those, the ones that stored their summary (acknowledged, not deduplicated)."""

    def lines(self) -> list[str]:
        return [
            f"appends: {self.appends} ({self.appends_acknowledged} acknowledged, "
            f"{self.appends_failed} failed, {self.appends_indeterminate} indeterminate); "
            f"{self.appends_lost} lost, {self.appends_duplicated} duplicated, "
            f"{self.appends_torn} torn",
            f"reads: {self.reads} ({self.reads_failed} failed); "
            f"{self.reads_backwards} went backwards",
            f"run: {self.duration:.3f} s, {self.appends_per_second:.1f} appends/s, "
            f"{self.reads_per_second:.1f} reads/s; longest unavailability "
            f"{self.longest_unavailability:.3f} s",
            f"append latency: {self.append_latency}",
            f"read latency: {self.read_latency}",
            *([f"summaries: {self.summaries} written, {self.summaries_stored} stored"]
              if self.summaries else []),
        ]


@dataclass(frozen=True)
class HistoryReport:
    """The anomalies found (empty when every promise held) and the figures.

    Times in the text are seconds since ``origin``, the start of the first operation.
    """

    anomalies: tuple[Anomaly, ...]
    figures: Figures
    origin: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.anomalies

    @property
    def counts(self) -> dict[str, int]:
        """How many anomalies of each kind were found (kinds with none left out)."""
        return dict(Counter(anomaly.kind for anomaly in self.anomalies))

    def of_kind(self, kind: Kind) -> list[Anomaly]:
        return [anomaly for anomaly in self.anomalies if anomaly.kind == kind]

    def __str__(self) -> str:
        if self.ok and not self.figures.appends:
            head = "history check: no anomalies, but no append was recorded: nothing was checked"
        elif self.ok:
            head = "history check: ok, no anomalies"
        else:
            found = ", ".join(f"{kind} {n}" for kind, n in sorted(self.counts.items()))
            head = f"history check: {len(self.anomalies)} anomalies ({found})"
        return "\n".join([head, *(f"  {line}" for line in self.figures.lines()),
                          *self._sections()])

    def _sections(self) -> list[str]:
        lines: list[str] = []
        for kind, meaning in KINDS.items():
            found = [a for a in self.anomalies if a.kind == kind]
            if found:
                lines += ["", f"{kind} ({len(found)}): {meaning}"]
                lines += [a.describe(self.origin) for a in found[:_SHOWN_PER_KIND]]
                if len(found) > _SHOWN_PER_KIND:
                    lines.append(f"... and {len(found) - _SHOWN_PER_KIND} more")
        return lines
