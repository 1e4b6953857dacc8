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


ALLOW_LOAD = "CHATLEDGER_BENCH_ALLOW_LOAD"
"""Set to 1 to report on a loaded machine anyway: the header then marks every figure."""

NOISY_EXIT = 3  # nothing measured: the machine was too busy for figures to mean anything


def environment() -> list[tuple[str, str]]:
    """Where and when the numbers were taken, as (label, text) header facts.

    Refuses (exit 3) on a machine busier than it has cores, where figures are
    noise, unless ``CHATLEDGER_BENCH_ALLOW_LOAD=1`` asks for them marked so.
    """
    now = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    return [
        ("date", now),
        ("platform", platform.platform()),
        ("cpus", str(os.cpu_count())),
        ("python", f"{sys.version.split()[0]} ({platform.python_implementation()})"),
        ("load", checked_load()),
    ]


def load_limit() -> float:
    """The busiest a machine may be for figures taken on it: one runnable task per core."""
    return float(os.cpu_count() or 1)


def checked_load(loads: tuple[float, float, float] | None = None) -> str:
    """The load (1, 5, 15 min) as a header fact; exits 3 above :func:`load_limit`, unless
    allowed, and then says every figure below is noise."""
    try:
        loads = loads or os.getloadavg()
    except OSError:  # not available on this platform
        return "unknown (figures unchecked)"
    text = " ".join(f"{value:.2f}" for value in loads)
    if loads[0] <= load_limit():
        return text
    if os.environ.get(ALLOW_LOAD) != "1":
        print(f"load {loads[0]:.2f} is above {load_limit():g} (one per core): figures taken "
              f"now are noise, so none are; wait for a quiet machine, or set {ALLOW_LOAD}=1 "
              "to print them marked as noise", file=sys.stderr)
        raise SystemExit(NOISY_EXIT)
    return (f"{text}\nNOISY: above {load_limit():g} (one per core); every figure below is "
            "marked by this line, compare ratios only")


def print_header(title: str, facts: Sequence[tuple[str, str]]) -> None:
    """Print ``title``, then one labelled fact a line; a fact's further lines are indented."""
    print(title)
    for label, text in facts:
        first, *rest = text.splitlines()
        print(f"{label + ':':<{LABEL_WIDTH}}{first}")
        for line in rest:
            print(f"{'':<{LABEL_WIDTH}}{line}")
    print()
