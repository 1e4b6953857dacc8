"""``ledger_probe``: what every store call of the test did, and assertions on it.

It listens to :mod:`chatledger._events` for the duration of the test (calls
made in this process, by the test or by the code under test, on any store),
counts operations, errors by type, retries and deduplicated appends, keeps
latencies, and spots *silent empty reads*: a read that came back at version 0
for a session that had shown a higher version, with no delete or purge of it
through a store in between. That is the failure chatledger exists to prevent:
an agent that "forgets" the customer without anyone being told. A read with
``min_version`` or ``ledger`` raises instead, and counts as an error.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass

from .._events import Operation
from .._results import Ack, History, SessionInfo

__all__ = ["LedgerProbe", "SilentEmptyRead"]

Key = tuple[str, str, str]  # url, namespace, session


@dataclass(frozen=True)
class SilentEmptyRead:
    """A read that answered "nothing here" about a session known to hold ``known`` messages."""

    operation: Operation
    known: int

    def __str__(self) -> str:
        op = self.operation
        return (f"read of session {op.target!r} (namespace {op.namespace!r} at {op.url}) "
                f"returned version 0, but version {self.known} had been seen")


class LedgerProbe:
    """Listens to store calls; pass :meth:`record` to ``chatledger._events.listening``."""

    def __init__(self) -> None:
        self.operations: list[Operation] = []
        self.silent_empty_reads: list[SilentEmptyRead] = []
        self._known: dict[Key, int] = {}

    def record(self, operation: Operation) -> None:
        self.operations.append(operation)
        self._track(operation)

    # -- figures ----------------------------------------------------------------

    @property
    def counts(self) -> Counter[str]:
        """Calls by operation name."""
        return Counter(op.name for op in self.operations)

    @property
    def errors(self) -> Counter[str]:
        """Failed calls by error type."""
        return Counter(type(op.error).__name__ for op in self.operations if op.error)

    @property
    def retries(self) -> int:
        """Attempts beyond the first, over every call."""
        return sum(max(0, op.attempts - 1) for op in self.operations)

    @property
    def deduplicated(self) -> int:
        """Appends answered with the original Ack: a retry of a stored batch."""
        return sum(isinstance(op.result, Ack) and op.result.deduplicated
                   for op in self.operations)

    def latency_ms(self, name: str | None = None) -> dict[str, float]:
        """p50, p90, p99 and max of call durations (of one operation, or all)."""
        samples = sorted(op.duration * 1000 for op in self.operations
                         if name is None or op.name == name)
        if not samples:
            return {}
        cuts = statistics.quantiles(samples, n=100, method="inclusive") if len(samples) > 1 \
            else samples * 99
        return {"p50": cuts[49], "p90": cuts[89], "p99": cuts[98], "max": samples[-1]}

    # -- assertions -----------------------------------------------------------------

    def assert_no_errors(self, *, allow: tuple[type[BaseException], ...] = ()) -> None:
        """Fail if any store call raised (other than the ``allow``-ed types)."""
        __tracebackhide__ = True  # the report points at the test's line, not at this one
        failed = [op for op in self.operations
                  if op.error is not None and not isinstance(op.error, allow)]
        assert not failed, "store calls failed:\n" + "\n".join(
            f"  {op.name} {op.target!r}: {type(op.error).__name__}: {op.error}" for op in failed)

    def assert_no_silent_empty_reads(self) -> None:
        """Fail if a read returned nothing for a session that had a version before."""
        __tracebackhide__ = True
        assert not self.silent_empty_reads, "silent empty reads (memory lost, nobody told):\n" + \
            "\n".join(f"  {read}" for read in self.silent_empty_reads)

    def summary(self) -> str:
        """A few lines a person reads when the test fails."""
        counts = ", ".join(f"{name} {n}" for name, n in sorted(self.counts.items())) or "none"
        errors = ", ".join(f"{name} {n}" for name, n in sorted(self.errors.items())) or "none"
        latency = self.latency_ms()
        lines = [f"store calls: {counts}", f"errors: {errors}",
                 f"retries: {self.retries}, deduplicated appends: {self.deduplicated}"]
        if latency:
            lines.append("latency ms: " + ", ".join(f"{k} {v:.2f}" for k, v in latency.items()))
        lines += [f"silent empty read: {read}" for read in self.silent_empty_reads]
        return "\n".join(lines)

    # -- bookkeeping ----------------------------------------------------------------

    def _track(self, op: Operation) -> None:
        key = (_where(op), op.namespace, op.target)
        if op.error is not None:
            return
        if op.name in ("delete", "forget_session", "purge"):
            self._forget(op)
        elif isinstance(op.result, (Ack, History, SessionInfo)):
            self._saw(key, op, op.result.version)
        elif op.name == "info" and op.result is None:
            self._saw(key, op, 0)

    def _saw(self, key: Key, op: Operation, version: int) -> None:
        known = self._known.get(key, 0)
        if version == 0 and known > 0 and op.name in ("read", "info"):
            self.silent_empty_reads.append(SilentEmptyRead(op, known))
        self._known[key] = max(known, version) if version else 0

    def _forget(self, op: Operation) -> None:
        """A deliberate delete or purge: an empty read afterwards is no surprise."""
        if op.name in ("delete", "forget_session"):
            self._known.pop((_where(op), op.namespace, op.target), None)
            return
        for key in [k for k in self._known if k[:2] == (_where(op), op.namespace)
                    and k[2].startswith(op.target)]:
            del self._known[key]


def _where(op: Operation) -> str:
    """The store's address without its options: ``ledger_url`` and ``ledger_store``,
    one with ``?namespace=...`` and one without, are the same store."""
    return op.url.partition("?")[0]
