"""Prometheus: the OpenTelemetry metrics, for users who scrape instead.

Names follow Prometheus' conventions (``_seconds``, ``_total``, ``_bytes``);
labels are the low-cardinality ones of the OpenTelemetry metrics. The metrics
are registered once per registry, shared by every store that records into it.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

from .._events import Operation
from . import outcome
from .outcome import Where

__all__ = ["PrometheusListener"]

_LABELS = ("db_system", "namespace", "operation")
_BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0)


@dataclass(frozen=True)
class _Metrics:
    duration: Histogram
    retries: Counter
    memory_lost: Counter
    conflicts: Counter
    appended: Counter

    @classmethod
    def registered(cls, registry: CollectorRegistry) -> _Metrics:
        def counter(name: str, text: str) -> Counter:
            return Counter(name, text, _LABELS, registry=registry)

        return cls(
            duration=Histogram("chatledger_operation_duration_seconds",
                               "Duration of chatledger store calls, retries included",
                               (*_LABELS, "outcome"), registry=registry, buckets=_BUCKETS),
            retries=counter("chatledger_retries", "Attempts retried after BackendUnavailable"),
            memory_lost=counter("chatledger_memory_lost", "Calls that raised MemoryLostError"),
            conflicts=counter("chatledger_conflicts", "Appends that raised ConflictError"),
            appended=counter("chatledger_appended_bytes",
                             "Encoded bytes of the batches appended (not deduplicated ones)"),
        )


_registered: weakref.WeakKeyDictionary[CollectorRegistry, _Metrics] = (
    weakref.WeakKeyDictionary())


def _metrics(registry: CollectorRegistry) -> _Metrics:
    if registry not in _registered:
        _registered[registry] = _Metrics.registered(registry)
    return _registered[registry]


class PrometheusListener:
    """Records each store call of one store into a registry's metrics."""

    def __init__(self, where: Where, registry: object) -> None:
        self._system, self._namespace = where.system, where.namespace
        self._metrics = _metrics(registry if isinstance(registry, CollectorRegistry)
                                 else REGISTRY)

    def __call__(self, operation: Operation) -> None:
        labels = (self._system, self._namespace, operation.name)
        result = outcome.outcome(operation)
        found = self._metrics
        found.duration.labels(*labels, result).observe(operation.duration)
        if retried := outcome.retries(operation):
            found.retries.labels(*labels).inc(retried)
        if result == "memory_lost":
            found.memory_lost.labels(*labels).inc()
        elif result == "conflict":
            found.conflicts.labels(*labels).inc()
        if appended := outcome.appended_bytes(operation):
            found.appended.labels(*labels).inc(appended)
