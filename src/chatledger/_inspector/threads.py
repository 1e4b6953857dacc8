"""LangGraph threads, read through the chatledger saver on the same store.

A thread is listed by its index session (``lg:<length>:<thread>``), and shown
as the saver's own ``list`` gives it: every checkpoint of every namespace, the
newest first, with its parent (a checkpoint that is the parent of several is
where the thread forked), its metadata, channel values and pending writes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from .._async.store import AsyncStore
from .conversation import pretty
from .listing import ids_window

__all__ = ["ROOT_PREFIX", "CHECKPOINT_LIMIT", "Checkpoint", "thread_checkpoints",
           "thread_of", "thread_of_index", "threads_page"]

ROOT_PREFIX = "lg:"
CHECKPOINT_LIMIT = 200
"""Checkpoints a thread page shows: the first the saver lists."""


def thread_of_index(session_id: str) -> str | None:
    """The thread whose index session is ``session_id`` (None for any other id)."""
    found = thread_of(session_id)
    return found if session_id == f"{ROOT_PREFIX}{len(found or '')}:{found}" else None


def thread_of(session_id: str) -> str | None:
    """The thread of a LangGraph session (its index or a namespace), None for others."""
    if not session_id.startswith(ROOT_PREFIX):
        return None
    length, sep, rest = session_id[len(ROOT_PREFIX):].partition(":")
    if not sep or not length.isdigit() or len(rest) < int(length):
        return None
    thread, ns = rest[:int(length)], rest[int(length):]
    return thread if thread and (not ns or ns.startswith(":")) else None


async def threads_page(store: AsyncStore, number: int, limit: int) -> tuple[list[str], bool]:
    ids, more = await ids_window(store.sessions(ROOT_PREFIX), (number - 1) * limit, limit,
                                 keep=lambda sid: thread_of_index(sid) is not None)
    return sorted(t for t in map(thread_of_index, ids) if t is not None), more


@dataclass(frozen=True)
class Checkpoint:
    id: str
    namespace: str
    parent: str | None
    step: Any
    source: Any
    created: str
    metadata: str
    values: str
    writes: list[tuple[str, str, str]]  # (task, channel, value)
    children: int = 0

    @property
    def forked(self) -> bool:
        return self.children > 1


async def thread_checkpoints(store: AsyncStore, thread_id: str,
                             limit: int = CHECKPOINT_LIMIT) -> list[Checkpoint]:
    from ..langgraph import AsyncLedgerSaver  # noqa: PLC0415 -- the langgraph extra

    saver = AsyncLedgerSaver(store)
    found = []
    async for item in saver.alist({"configurable": {"thread_id": thread_id}},
                                  limit=limit):
        configurable = item.config["configurable"]
        parent = item.parent_config["configurable"]["checkpoint_id"] if item.parent_config \
            else None
        found.append(Checkpoint(
            id=configurable["checkpoint_id"], namespace=configurable["checkpoint_ns"],
            parent=parent, step=item.metadata.get("step"), source=item.metadata.get("source"),
            created=str(item.checkpoint.get("ts", "")), metadata=pretty(item.metadata),
            values=_short(pretty(item.checkpoint["channel_values"])),
            writes=[(task, channel, _short(pretty(value)))
                    for task, channel, value in item.pending_writes or []]))
    children = Counter(c.parent for c in found if c.parent is not None)
    return [replace(c, children=children[c.id]) for c in found]


def _short(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else f"{text[:limit]}\n... ({len(text):,} characters)"
