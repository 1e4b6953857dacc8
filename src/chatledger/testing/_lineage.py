"""A thread's checkpoints read back through the saver, and what they show.

The verdicts work on plain data (``ThreadReading``), so they are checked on
histories no correct saver produces too (a duplicate, a thread with no
checkpoint); only ``read_thread`` talks to the saver.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._checkpointer_report import DuplicatedItem, Fork, LostTurn, Turn

__all__ = ["CHANNEL", "Stored", "ThreadReading", "duplicates", "forks", "lost", "read_thread"]

CHANNEL = "items"  # the chat graph's state: the list every turn appends to


@dataclass(frozen=True)
class Stored:
    """One checkpoint of the thread: its id, its parent's, and the list it holds."""

    id: str
    parent: str | None
    items: tuple[str, ...]


@dataclass(frozen=True)
class ThreadReading:
    thread_id: str
    durability: str
    latest: Stored | None  # what get_tuple returns: the state the next turn starts from
    checkpoints: tuple[Stored, ...]  # every checkpoint list returns


def read_thread(saver: Any, thread_id: str, durability: str) -> ThreadReading:
    """``get_tuple`` and ``list`` of the thread's root namespace (the graph has no subgraph)."""
    config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    latest = saver.get_tuple(config)
    return ThreadReading(
        thread_id, durability, latest=_stored(latest) if latest is not None else None,
        checkpoints=tuple(_stored(found) for found in saver.list(config)))


def _stored(found: Any) -> Stored:
    parent = found.parent_config["configurable"]["checkpoint_id"] if found.parent_config \
        else None
    items = found.checkpoint["channel_values"].get(CHANNEL, [])
    return Stored(found.config["configurable"]["checkpoint_id"], parent, tuple(items))


def forks(reading: ThreadReading) -> list[Fork]:
    """Every parent (or the thread's start) with two or more children."""
    children: dict[str | None, list[str]] = {}
    for stored in reading.checkpoints:
        children.setdefault(stored.parent, []).append(stored.id)
    return [Fork(reading.thread_id, reading.durability, parent, tuple(sorted(kids)))
            for parent, kids in children.items() if len(kids) > 1]


def lost(reading: ThreadReading, turns: Sequence[Turn]) -> list[LostTurn]:
    """Acknowledged turns of this thread whose question or answer the latest state lacks."""
    held = reading.latest.items if reading.latest else ()
    found: list[LostTurn] = []
    for turn in turns:
        missing = tuple(item for item in turn.items if item not in held)
        if turn.outcome == "acknowledged" and missing:
            holders = tuple(c.id for c in reading.checkpoints
                            if any(item in c.items for item in missing))
            found.append(LostTurn(turn, reading.latest.id if reading.latest else None,
                                  missing, holders))
    return found


def duplicates(reading: ThreadReading) -> list[DuplicatedItem]:
    """Items the latest state holds more than once, whoever appended them."""
    if reading.latest is None:
        return []
    return [DuplicatedItem(reading.thread_id, reading.durability, item, count,
                           reading.latest.id)
            for item, count in Counter(reading.latest.items).items() if count > 1]
