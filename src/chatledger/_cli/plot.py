"""``chatledger bench --plot``: turn time against history length, as a PNG (matplotlib)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # a file, never a window: this runs on servers

import matplotlib.pyplot as plt

from .._turn_cost import Row


def draw(rows: list[Row], path: Path, url: str) -> None:
    """One line per contender: the median turn (p90 as the bar's top) at each length."""
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for name in dict.fromkeys(row.contender for row in rows):
        mine = [row for row in rows if row.contender == name]
        xs = [max(row.length, 1) for row in mine]
        medians = [row.median_us for row in mine]
        spread: list[list[float]] = [[0.0] * len(mine),
                                     [row.p90_us - row.median_us for row in mine]]
        axes.errorbar(xs, medians, yerr=spread, marker="o", capsize=3, label=name)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("messages in the session")
    axes.set_ylabel("one turn, µs (median; bar to p90)")
    axes.set_title(f"read(last=20) + append(pair) on {url}", fontsize=9)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
