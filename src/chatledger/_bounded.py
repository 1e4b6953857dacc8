"""Bounded dicts shared by threads without a lock: dropping the oldest keys safely."""

from __future__ import annotations

from typing import Any

__all__ = ["keep_within"]


def keep_within(entries: dict[Any, Any], limit: int) -> None:
    """Drop ``entries``' oldest keys (the first inserted) until ``limit`` are left.

    Other threads may add and drop keys meanwhile (a sync store's backend is
    shared by LangGraph's executor threads): iterating a dict that another
    thread resized raises RuntimeError, and a key may be gone by the time it is
    dropped. Either way the dict changed: look at it again.
    """
    while len(entries) > limit:
        try:
            oldest = next(iter(entries))
        except (RuntimeError, StopIteration):
            continue
        entries.pop(oldest, None)
