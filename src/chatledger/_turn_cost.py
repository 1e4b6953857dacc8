"""The cost of one agent turn as a conversation grows: the measurement behind
``benchmarks/turn_cost.py`` and ``chatledger bench``.

A *turn* is what an agent does on every request: ``read(last=20)`` to build the
prompt, then ``append([user, assistant])`` of one exchange. Sessions are filled
to each history length first (batches of 1,000), then timed turns run
interleaved across the lengths, one turn at each length per round, so that
drift over the run favours no length. Messages are built before the clock
starts. Other contenders (a peer library) plug in as :data:`Turn` functions.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ._messages import Message, assistant, user
from ._sync.store import Session

__all__ = ["WINDOW", "Row", "Turn", "conversation", "fill", "measure", "pair", "session_turn"]

WINDOW = 20
BATCH = 1_000
USER_TEXT = "Where is my order? It was due on Tuesday and the tracking page says nothing. " * 2
ASSISTANT_TEXT = "Let me check: your order shipped yesterday and should arrive tomorrow. " * 8

Turn = Callable[[int], int]
"""Runs the ``n``-th turn on one history and returns its wall time in nanoseconds."""


@dataclass(frozen=True)
class Row:
    """The timings of one contender at one history length, in nanoseconds."""

    contender: str
    length: int
    samples: list[int]

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples) / 1_000

    @property
    def p90_us(self) -> float:
        if len(self.samples) < 2:
            return self.median_us
        return statistics.quantiles(self.samples, n=10, method="inclusive")[-1] / 1_000


def pair(n: int) -> list[Message]:
    """One user message and the assistant's answer."""
    return [user(f"#{n} {USER_TEXT}"), assistant(f"#{n} {ASSISTANT_TEXT}")]


def conversation(length: int) -> list[Message]:
    """``length`` messages of alternating user and assistant turns."""
    return [m for n in range(0, length, 2) for m in pair(n)][:length]


def fill(session: Session, history: Sequence[Message]) -> None:
    """Append ``history`` to ``session``, ``BATCH`` messages at a time, and check it."""
    for start in range(0, len(history), BATCH):
        session.append(history[start : start + BATCH])
    info = session.info()
    if info is None or info.count != len(history):
        raise RuntimeError(f"filled {session.id} with {len(history)} messages; it holds {info}")


def session_turn(session: Session) -> Turn:
    """chatledger's turn on ``session``: read the window, append a pair."""
    def turn(n: int) -> int:
        messages = pair(n)
        start = time.perf_counter_ns()
        history = session.read(last=WINDOW)
        session.append(messages)
        elapsed = time.perf_counter_ns() - start
        if len(history.messages) != min(WINDOW, history.version):
            raise RuntimeError(f"read(last={WINDOW}) returned {len(history.messages)} messages")
        return elapsed
    return turn


def measure(contender: str, turns: Mapping[int, Turn], *, timed: int, warmup: int,
            progress: Callable[[], None] = lambda: None) -> list[Row]:
    """Time ``timed`` turns at every history length, after ``warmup`` untimed rounds."""
    samples: dict[int, list[int]] = {length: [] for length in turns}
    gc.collect()
    for round_ in range(warmup + timed):
        for length, turn in turns.items():
            elapsed = turn(round_)
            if round_ >= warmup:
                samples[length].append(elapsed)
        progress()
    return [Row(contender, length, samples[length]) for length in turns]
