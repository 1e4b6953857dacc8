"""What the benchmark scripts share: the environment header and the sample statistics.

The scripts run as ``python benchmarks/<script>.py``, which puts this directory on
``sys.path``, so they import it as ``_report``.
"""

from __future__ import annotations

import datetime
import os
import platform
import statistics
import sys
from collections.abc import Sequence

LABEL_WIDTH = 10


def median_us(samples: Sequence[int]) -> float:
    """The median of ``samples`` (nanoseconds), in microseconds."""
    return statistics.median(samples) / 1_000


def p90_us(samples: Sequence[int]) -> float:
    """The 90th percentile of ``samples`` (nanoseconds), in microseconds."""
    return statistics.quantiles(samples, n=10, method="inclusive")[-1] / 1_000


def environment() -> list[tuple[str, str]]:
    """Where and when the numbers were taken, as (label, text) header facts."""
    now = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    return [
        ("date", now),
        ("platform", platform.platform()),
        ("cpus", str(os.cpu_count())),
        ("python", f"{sys.version.split()[0]} ({platform.python_implementation()})"),
        ("load", load_average()),
    ]


def load_average() -> str:
    """The machine's load (1, 5, 15 min): on a shared machine, ratios are fair, times not."""
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:  # not available on this platform
        return "unknown"


def print_header(title: str, facts: Sequence[tuple[str, str]]) -> None:
    """Print ``title``, then one labelled fact a line; a fact's further lines are indented."""
    print(title)
    for label, text in facts:
        first, *rest = text.splitlines()
        print(f"{label + ':':<{LABEL_WIDTH}}{first}")
        for line in rest:
            print(f"{'':<{LABEL_WIDTH}}{line}")
    print()
