"""The served store's own metrics: its Prometheus registry, as text and as a table.

The store is opened with ``prometheus=`` a registry of the inspector's own, so
``/metrics`` shows exactly the calls this inspector made (the metric names of
``docs/observing.md``), and nothing of any other store in the process.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, generate_latest

__all__ = ["OperationStats", "exposition", "operation_stats", "totals"]

_COUNTERS = ("chatledger_retries", "chatledger_memory_lost", "chatledger_conflicts",
             "chatledger_appended_bytes")


def exposition(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)


@dataclass(frozen=True)
class OperationStats:
    operation: str
    outcome: str
    calls: int
    mean_ms: float


def operation_stats(registry: CollectorRegistry) -> list[OperationStats]:
    """Calls and mean duration per operation and outcome, since the inspector started."""
    counts: dict[tuple[str, str], float] = defaultdict(float)
    sums: dict[tuple[str, str], float] = defaultdict(float)
    for family in registry.collect():
        if family.name != "chatledger_operation_duration_seconds":
            continue
        for sample in family.samples:
            key = (sample.labels["operation"], sample.labels["outcome"])
            if sample.name.endswith("_count"):
                counts[key] += sample.value
            elif sample.name.endswith("_sum"):
                sums[key] += sample.value
    return [OperationStats(op, outcome, int(counts[op, outcome]),
                           1000 * sums[op, outcome] / counts[op, outcome])
            for op, outcome in sorted(counts) if counts[op, outcome]]


def totals(registry: CollectorRegistry) -> dict[str, float]:
    """Each counter's total over its labels (0 when nothing was counted)."""
    found = dict.fromkeys(_COUNTERS, 0.0)
    for family in registry.collect():
        if family.name in found:
            found[family.name] = sum(s.value for s in family.samples
                                     if s.name.endswith("_total"))
    return found
