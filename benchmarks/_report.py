"""What the benchmark scripts share: the environment header and the sample statistics.

The scripts run as ``python benchmarks/<script>.py``, which puts this directory on
``sys.path``, so they import it as ``_report``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
from collections.abc import Sequence
from typing import TypeVar

LABEL_WIDTH = 10
CHECK_HELP = "exit 1 if a ratio misses its target"

T = TypeVar("T")


def parse_args(argv: list[str] | None, doc: str | None, *, quick: T, full: T,
               quick_help: str, check: bool = True) -> tuple[T, bool]:
    """The flags every timing script takes: ``--quick`` (a shorter run) and, where it
    has targets, ``--check`` (exit 1 on a miss). Returns the run's config, ``quick``
    or ``full``, and whether to check. ``doc``: the script's docstring, whose first
    line is the ``--help`` description."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    if check:
        parser.add_argument("--check", action="store_true", help=CHECK_HELP)
    args = parser.parse_args(argv)
    return (quick if args.quick else full), bool(getattr(args, "check", False))


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
