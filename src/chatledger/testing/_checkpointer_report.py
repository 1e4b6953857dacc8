"""What ``check_checkpointer`` found: every turn's outcome, and the thread histories
that break a checkpointer's promises (forks, lost acknowledged turns, duplicates).

No LangGraph import here: the report is plain data, readable without the extra.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ._concurrency import WorkerError

__all__ = ["CheckpointerReport", "DuplicatedItem", "Fork", "LostTurn", "Turn", "TurnOutcome"]

TurnOutcome = Literal["acknowledged", "refused", "error"]

# Past this many findings of one kind, the summary says how many more there are.
_SHOWN_PER_KIND = 10
# A lost turn's items are in every checkpoint of its branch: the first few say where.
_SHOWN_HOLDERS = 3


@dataclass(frozen=True)
class Turn:
    """One ``graph.invoke`` by one process: a question in, an answer appended by the graph.

    ``acknowledged``: invoke returned, so both items must be in the thread's
    latest state. ``refused``: it raised one of the refusal types (the saver
    said no; nothing promised). ``error``: it raised anything else (the turn may
    or may not be stored, but never twice).
    """

    process: int
    round: int
    durability: str
    thread_id: str
    new_thread: bool  # no checkpoint of this thread existed before this round
    outcome: TurnOutcome
    question: str
    answer: str
    error: str = ""
    seconds: float = 0.0

    @property
    def items(self) -> tuple[str, str]:
        return (self.question, self.answer)

    def __str__(self) -> str:
        thread = "new thread" if self.new_thread else "thread"
        error = f": {self.error}" if self.error else ""
        return (f"process {self.process} round {self.round} ({self.durability}, {thread} "
                f"{self.thread_id!r}) {self.outcome}{error}")


@dataclass(frozen=True)
class Fork:
    """A checkpoint with two or more children: the thread silently branched.

    ``parent`` is None when the thread has two or more first checkpoints (two
    runs each started the thread).
    """

    thread_id: str
    durability: str
    parent: str | None
    children: tuple[str, ...]

    def __str__(self) -> str:
        children = ", ".join(self.children)
        if self.parent is None:
            return (f"thread {self.thread_id!r} ({self.durability}) has {len(self.children)} "
                    f"first checkpoints (no parent): {children}")
        return (f"thread {self.thread_id!r} ({self.durability}): checkpoint {self.parent} has "
                f"{len(self.children)} children: {children}")


@dataclass(frozen=True)
class LostTurn:
    """An acknowledged turn whose items are not in its thread's latest state.

    ``held_by`` are the checkpoints that do hold them: a branch the latest
    checkpoint does not descend from (empty when no checkpoint holds them).
    """

    turn: Turn
    latest: str | None  # None: the thread has no checkpoint at all
    missing: tuple[str, ...]
    held_by: tuple[str, ...]

    def __str__(self) -> str:
        where = f"latest checkpoint {self.latest}" if self.latest else "any checkpoint (none)"
        shown = ", ".join(self.held_by[:_SHOWN_HOLDERS])
        more = f" and {len(self.held_by) - _SHOWN_HOLDERS} more" \
            if len(self.held_by) > _SHOWN_HOLDERS else ""
        held = f"; held only by {shown}{more}" if self.held_by else "; held by no checkpoint"
        return f"{self.turn}: {list(self.missing)} not in {where}{held}"


@dataclass(frozen=True)
class DuplicatedItem:
    """An item the latest state holds more than once: a turn or task applied twice."""

    thread_id: str
    durability: str
    item: str
    count: int
    latest: str

    def __str__(self) -> str:
        return (f"thread {self.thread_id!r} ({self.durability}): {self.item!r} appears "
                f"{self.count} times in latest checkpoint {self.latest}")


@dataclass(frozen=True)
class CheckpointerReport:
    """Every turn, what reading the threads back showed, and the workers that failed.

    ``ok`` is True when no thread forked, no acknowledged turn was lost, no item
    was applied twice, no turn raised an error other than a refusal, and every
    worker finished: refusals are how a checkpointer keeps its promises under
    contention, and are only counted.
    """

    processes: int
    turns: tuple[Turn, ...]
    forks: tuple[Fork, ...]
    lost: tuple[LostTurn, ...]
    duplicates: tuple[DuplicatedItem, ...]
    failures: tuple[WorkerError, ...]
    threads: int
    checkpoints: int
    seconds: float

    @property
    def ok(self) -> bool:
        return not (self.forks or self.lost or self.duplicates or self.errors or self.failures)

    @property
    def acknowledged(self) -> tuple[Turn, ...]:
        return self._with("acknowledged")

    @property
    def refused(self) -> tuple[Turn, ...]:
        return self._with("refused")

    @property
    def errors(self) -> tuple[Turn, ...]:
        return self._with("error")

    def _with(self, outcome: TurnOutcome) -> tuple[Turn, ...]:
        return tuple(turn for turn in self.turns if turn.outcome == outcome)

    def summary(self) -> str:
        """A verdict line, the figures per durability mode, then every finding."""
        lines = [self._verdict(), self._figures(), *self._unshared(), *self._table()]
        lines += _section("forks", self.forks)
        lines += _section("lost acknowledged turns", self.lost)
        lines += _section("duplicated items", self.duplicates)
        lines += _section("turns that raised an error", self.errors)
        lines += _section("workers that failed", [str(f).splitlines()[0] for f in self.failures])
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def _verdict(self) -> str:
        if self.ok:
            return "checkpointer check: ok (no fork, no lost acknowledged turn, no duplicate)"
        counts = [(len(self.forks), "fork(s)"), (len(self.lost), "lost acknowledged turn(s)"),
                  (len(self.duplicates), "duplicated item(s)"), (len(self.errors), "error(s)"),
                  (len(self.failures), "failed worker(s)")]
        return "checkpointer check: NOT OK: " + ", ".join(
            f"{count} {what}" for count, what in counts if count)

    def _figures(self) -> str:
        return (f"{len(self.turns)} turns by {self.processes} processes on {self.threads} "
                f"threads in {self.seconds:.1f} s: {len(self.acknowledged)} acknowledged, "
                f"{len(self.refused)} refused, {len(self.errors)} errors; "
                f"{self.checkpoints} checkpoints read back")

    def _unshared(self) -> list[str]:
        """What every turn acknowledged and nothing read back most likely means."""
        if self.checkpoints or not self.acknowledged:
            return []
        return ["nothing was read back of what the workers stored: is the saver shared "
                "between them? (a saver keeping its data in its process, as InMemorySaver, "
                "needs mode='threads'; a factory must open the same database for the same "
                "target)"]

    def _table(self) -> list[str]:
        header = (f"  {'durability':<10} {'turns':>5} {'acked':>5} {'refused':>7} "
                  f"{'errors':>6} {'forks':>5} {'lost':>4} {'dup':>3}")
        rows = [header]
        for mode in dict.fromkeys(turn.durability for turn in self.turns):
            turns = [t for t in self.turns if t.durability == mode]
            rows.append(
                f"  {mode:<10} {len(turns):>5} {_count(turns, 'acknowledged'):>5} "
                f"{_count(turns, 'refused'):>7} {_count(turns, 'error'):>6} "
                f"{sum(f.durability == mode for f in self.forks):>5} "
                f"{sum(x.turn.durability == mode for x in self.lost):>4} "
                f"{sum(d.durability == mode for d in self.duplicates):>3}")
        return rows


def _count(turns: Iterable[Turn], outcome: TurnOutcome) -> int:
    return sum(turn.outcome == outcome for turn in turns)


def _section(title: str, findings: Sequence[object]) -> list[str]:
    if not findings:
        return []
    lines = [f"{title}:"] + [f"  {finding}" for finding in findings[:_SHOWN_PER_KIND]]
    if len(findings) > _SHOWN_PER_KIND:
        lines.append(f"  ... and {len(findings) - _SHOWN_PER_KIND} more")
    return lines
