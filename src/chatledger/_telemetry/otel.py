"""OpenTelemetry: a CLIENT span per store call and the operation metrics.

Spans and instruments come from OpenTelemetry's global providers: the
application configures the SDK and its exporters (or the ``OTEL_*``
environment variables through ``opentelemetry-instrument``); without an SDK the
API's no-op providers record nothing.

The span is made when the call has ended, with the call's start and end
times, in the caller's context: it is a child of whatever span the caller (or
the LangChain and LangGraph adapters' caller) had open.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache

from opentelemetry import metrics, trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from .._events import Operation
from .._version import __version__
from . import outcome
from .outcome import Where

__all__ = ["OtelListener"]

_SCOPE = "chatledger"
# OpenTelemetry's advice for db.client.operation.duration, in seconds.
_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0]
# What a call's target is, when it is not one session's id.
_TARGETS = {"list_sessions": "chatledger.prefix", "purge": "chatledger.prefix",
            "heads": "chatledger.prefix", "group_heads": "chatledger.prefix",
            "vector_search": "chatledger.prefix",
            "user_sessions": "chatledger.user.id"}

@dataclass(frozen=True)
class _Instruments:
    duration: metrics.Histogram
    retries: metrics.Counter
    memory_lost: metrics.Counter
    conflicts: metrics.Counter
    appended: metrics.Counter


@cache
def _instruments() -> _Instruments:
    """One set per process: every traced store records into the same instruments."""
    meter = metrics.get_meter(_SCOPE, __version__)
    return _Instruments(
        duration=meter.create_histogram(
            "db.client.operation.duration", unit="s",
            description="Duration of chatledger store calls, retries included",
            explicit_bucket_boundaries_advisory=_BUCKETS),
        retries=meter.create_counter(
            "chatledger.retries", unit="{retry}",
            description="Attempts retried after BackendUnavailable"),
        memory_lost=meter.create_counter(
            "chatledger.memory_lost", unit="{error}",
            description="Calls that raised MemoryLostError"),
        conflicts=meter.create_counter(
            "chatledger.conflicts", unit="{error}",
            description="Appends that raised ConflictError"),
        appended=meter.create_counter(
            "chatledger.appended", unit="By",
            description="Encoded bytes of the batches appended (not deduplicated ones)"),
    )


class OtelListener:
    """Turns each store call of one store into a span and metric points."""

    def __init__(self, where: Where) -> None:
        self._where = where.attributes()
        self._tracer = trace.get_tracer(_SCOPE, __version__)
        self._instruments = _instruments()

    def __call__(self, operation: Operation) -> None:
        self._span(operation)
        self._record(operation)

    def _span(self, operation: Operation) -> None:
        end = time.time_ns()
        ended = operation.started + operation.duration  # on the monotonic clock

        def wall(monotonic: float) -> int:
            return end - int((ended - monotonic) * 1e9)

        span = self._tracer.start_span(
            f"{operation.name} {self._where['db.namespace']}", kind=SpanKind.CLIENT,
            start_time=wall(operation.started), attributes=self._attributes(operation))
        for attempt, (at, kind) in enumerate(operation.failures[:outcome.retries(operation)], 1):
            span.add_event("chatledger.retry", {"chatledger.attempt": attempt,
                                                "error.type": kind}, timestamp=wall(at))
        result = outcome.outcome(operation)
        if result == "deduplicated":
            span.add_event("chatledger.deduplicated", timestamp=end)
        if operation.error is not None:
            # The class name only: an exception's text may quote what was refused.
            kind = type(operation.error).__name__
            span.add_event("exception", {"exception.type": kind}, timestamp=end)
            span.set_status(Status(StatusCode.ERROR, kind))
        span.end(end_time=end)

    def _attributes(self, operation: Operation) -> dict[str, str | int | bool]:
        target = _TARGETS.get(operation.name, "chatledger.session.id")
        found: dict[str, str | int | bool] = {
            **self._where, "db.operation.name": operation.name, target: operation.target,
            "chatledger.attempts": operation.attempts,
            "chatledger.outcome": outcome.outcome(operation),
            **outcome.details(operation)}
        if operation.error is not None:
            found["error.type"] = type(operation.error).__name__
        return found

    def _record(self, operation: Operation) -> None:
        common = {key: self._where[key] for key in ("db.system.name", "db.namespace")}
        common["db.operation.name"] = operation.name
        result = outcome.outcome(operation)
        measured = {**common, "chatledger.outcome": result}
        if operation.error is not None:
            measured["error.type"] = type(operation.error).__name__
        tools = self._instruments
        tools.duration.record(operation.duration, measured)
        if retried := outcome.retries(operation):
            tools.retries.add(retried, common)
        if result == "memory_lost":
            tools.memory_lost.add(1, common)
        elif result == "conflict":
            tools.conflicts.add(1, common)
        if appended := outcome.appended_bytes(operation):
            tools.appended.add(appended, common)
