"""OpenTelemetry's SDK with in-memory exporters, installed once per process.

OpenTelemetry's global providers can be set only once, so one session fixture
installs them and each test reads what its own namespace recorded.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@dataclass
class Telemetry:
    """What the SDK received, filtered to one namespace (one test's stores)."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    namespace: str

    def spans(self) -> list[ReadableSpan]:
        return [span for span in self.exporter.get_finished_spans()
                if (span.attributes or {}).get("db.namespace") == self.namespace]

    def points(self, name: str) -> list[Any]:
        """The data points of metric ``name`` recorded for this namespace."""
        data = self.reader.get_metrics_data()
        return [point
                for resource in (data.resource_metrics if data else ())
                for scope in resource.scope_metrics
                for metric in scope.metrics if metric.name == name
                for point in metric.data.data_points
                if point.attributes.get("db.namespace") == self.namespace]

    def total(self, name: str, **attributes: str) -> float:
        """The sum of counter ``name`` (or the count of histogram ``name``)."""
        return sum(getattr(point, "value", None) or point.count
                   for point in self.points(name)
                   if all(point.attributes.get(k.replace("_", ".")) == v
                          for k, v in attributes.items()))


_installed: list[tuple[InMemorySpanExporter, InMemoryMetricReader]] = []


def _install() -> tuple[InMemorySpanExporter, InMemoryMetricReader]:
    if not _installed:
        exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        _installed.append((exporter, reader))
    return _installed[0]


@pytest.fixture
def telemetry() -> Telemetry:
    exporter, reader = _install()
    return Telemetry(exporter, reader, f"otel-{uuid.uuid4().hex[:12]}")


def flat(spans: Sequence[ReadableSpan]) -> str:
    """Everything a span carries, as text: to look for what must not be there."""
    return repr([(span.name, dict(span.attributes or {}), span.status.description,
                  [(event.name, dict(event.attributes or {})) for event in span.events])
                 for span in spans])


@pytest.fixture
def tracer() -> Iterator[trace.Tracer]:
    _install()
    return trace.get_tracer("tests")
