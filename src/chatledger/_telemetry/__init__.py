"""Telemetry a store was asked for: OpenTelemetry (``tracing=True``) and
Prometheus (``prometheus=True`` or a registry).

Both are listeners of :mod:`chatledger._events` attached to one store, so they
see exactly what the pytest plugin's probe sees, and a store that asked for
neither does no bookkeeping at all. What they record is said once, in
:mod:`chatledger._telemetry.outcome`: never message content, never credentials.
"""

from __future__ import annotations

from .._events import Listener
from .._options import StoreOptions
from .._url import StoreURL
from .outcome import Where

__all__ = ["listeners"]


def listeners(url: StoreURL, options: StoreOptions) -> tuple[Listener, ...]:
    """The listeners ``options`` ask for (none by default)."""
    found: list[Listener] = []
    if options.tracing or options.prometheus:
        where = Where.of(url, options.namespace)
        if options.tracing:
            from .otel import OtelListener  # noqa: PLC0415 -- an optional extra

            found.append(OtelListener(where))
        if options.prometheus:
            from .prometheus import PrometheusListener  # noqa: PLC0415 -- an optional extra

            found.append(PrometheusListener(where, options.prometheus))
    return tuple(found)
