"""LangGraph threads, read through the chatledger saver on the same store.

A thread is listed by its index session (``lg:<length>:<thread>``), and shown
as the conversation it holds (the messages of its latest state), then as the
saver's own ``list`` gives it: every checkpoint of every namespace, oldest
first, with its parent (a checkpoint that is the parent of several is where
the thread forked; those off the latest line are marked as the other
branch), its metadata, channel values and pending writes as JSON.

A stored entry that cannot be decoded, and a checkpoint whose stored parts
do not load, are shown as damaged in their place among the checkpoints of
their namespace, with why: the page is where a user looks to diagnose such a
thread. Each namespace is listed on its own, so that damage that stops a
listing (a checkpoint's parts that do not join) stops that namespace's alone.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from .. import _core
from .._async.store import AsyncStore
from .._errors import CorruptEntryError
from .._messages import Message
from .conversation import MessageView, linked
from .listing import ids_window

__all__ = ["ROOT_PREFIX", "CHECKPOINT_LIMIT", "Checkpoint", "DamagedCheckpoint", "Thread",
           "readable", "thread_checkpoints", "thread_of", "thread_of_index", "threads_page"]

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
    live: bool = True  # on the line that leads to its namespace's latest checkpoint
    damaged: None = None  # how the template tells it from a DamagedCheckpoint

    @property
    def forked(self) -> bool:
        return self.children > 1


@dataclass(frozen=True)
class DamagedCheckpoint:
    """A stored entry of a namespace that does not decode, or a checkpoint that does
    not load: the thread, its namespace and the entry, and why."""

    namespace: str
    damaged: str


Step = Checkpoint | DamagedCheckpoint


@dataclass(frozen=True)
class Thread:
    """A thread as the page reads: its conversation, then each namespace's steps.

    ``conversation``: the messages of the root namespace's latest checkpoint
    that loads (its ``messages`` channel, or the first channel holding a list
    of messages), in order. ``namespaces``: (namespace, steps oldest first: its
    checkpoints, and each damaged entry where it is stored); a checkpoint off
    its namespace's latest line (``live`` False) is a fork's other branch,
    shown where it was stored.
    """

    id: str
    conversation: list[MessageView]
    channel: str | None  # the channel the conversation was read from
    namespaces: list[tuple[str, list[Step]]]
    damaged: list[str] = field(default_factory=list)  # each namespace the listing stopped in
    latest_damaged: bool = False  # the conversation is of the newest checkpoint that loads

    @property
    def checkpoints(self) -> list[Checkpoint]:
        return [c for _, steps in self.namespaces for c in steps if isinstance(c, Checkpoint)]


async def thread_checkpoints(store: AsyncStore, thread_id: str,
                             limit: int = CHECKPOINT_LIMIT, *,
                             serde: Any = None) -> Thread | None:
    """The thread's first ``limit`` checkpoints (the newest, as the saver lists them,
    read with ``serde``: None, LangGraph's own), None when it has none and nothing damaged."""
    from ..langgraph import AsyncLedgerSaver  # noqa: PLC0415 -- the langgraph extra

    saver = AsyncLedgerSaver(store, serde=serde)
    found: list[Step] = []
    damaged: list[str] = []
    latest_values: dict[str, Any] | None = None
    latest_damaged = False
    shown = 0
    for ns in await _namespaces(store, thread_id):
        try:
            async for item in saver._list_each(thread_id, ns, limit - shown):
                if isinstance(item, CorruptEntryError):
                    found.append(DamagedCheckpoint(ns, _damage(thread_id, ns, item)))
                    continue
                if latest_values is None and not ns:
                    latest_values = item.checkpoint["channel_values"]
                    latest_damaged = any(not step.namespace for step in found)  # damaged, newer
                found.append(_checkpoint(item))
                shown += 1
        except CorruptEntryError as exc:  # this namespace's older checkpoints stay unread
            damaged.append(f"{_damage(thread_id, ns, exc)}; its checkpoints from there back "
                           "are not shown")
        if shown >= limit:
            break
    if not found and not damaged:
        return None
    channel, messages = _conversation(latest_values or {})
    return Thread(thread_id, messages, channel, _by_namespace(found), damaged, latest_damaged)


async def _namespaces(store: AsyncStore, thread_id: str) -> list[str]:
    """The thread's checkpoint namespaces, in the store's listing order (one listing)."""
    from ..langgraph._layout import split_session_id, thread_prefix  # noqa: PLC0415

    listed = [split_session_id(sid) async for sid in store.sessions(thread_prefix(thread_id))]
    return list(dict.fromkeys(split[1] for split in listed if split is not None))


def _damage(thread_id: str, ns: str, exc: CorruptEntryError) -> str:
    from ..langgraph._layout import thread_words  # noqa: PLC0415 -- doctor's words for it

    return f"{thread_words(thread_id, ns)}: {_core.entry_damage(exc)}"


def _checkpoint(item: Any) -> Checkpoint:
    """A checkpoint as the page shows it, from the saver's CheckpointTuple."""
    configurable = item.config["configurable"]
    parent = item.parent_config["configurable"]["checkpoint_id"] if item.parent_config \
        else None
    return Checkpoint(
        id=configurable["checkpoint_id"], namespace=configurable["checkpoint_ns"],
        parent=parent, step=item.metadata.get("step"), source=item.metadata.get("source"),
        created=str(item.checkpoint.get("ts", "")), metadata=readable(item.metadata),
        values=_short(readable(item.checkpoint["channel_values"])),
        writes=[(task, channel, _short(readable(value)))
                for task, channel, value in item.pending_writes or []])


def _by_namespace(newest_first: list[Step]) -> list[tuple[str, list[Step]]]:
    """Each namespace's steps oldest first (a damaged one where it is stored), forks
    counted and the latest line marked."""
    children = Counter(c.parent for c in newest_first
                       if isinstance(c, Checkpoint) and c.parent is not None)
    namespaces: dict[str, list[Step]] = {}
    for step in newest_first:
        namespaces.setdefault(step.namespace, []).append(step)
    shown = []
    for ns in sorted(namespaces):  # the root ("") first
        listed = namespaces[ns]
        checkpoints = [c for c in listed if isinstance(c, Checkpoint)]
        line = _latest_line(checkpoints, damaged=len(checkpoints) < len(listed))
        shown.append((ns, [replace(c, children=children[c.id], live=line is None or c.id in line)
                           if isinstance(c, Checkpoint) else c for c in reversed(listed)]))
    return shown


def _latest_line(newest_first: list[Checkpoint], damaged: bool) -> set[str] | None:
    """The checkpoints on the line from the latest back by their parents; None when it
    runs into a parent not listed while the namespace holds damage: the line may go on
    through the damaged entry, so no checkpoint is called the other branch."""
    parents = {c.id: c.parent for c in newest_first}
    line: set[str] = set()
    at = newest_first[0].id if newest_first else None  # the saver lists the latest first
    while at is not None and at not in line:
        if at not in parents:
            return None if damaged else line
        line.add(at)
        at = parents[at]
    return line


def _conversation(values: dict[str, Any]) -> tuple[str | None, list[MessageView]]:
    """The messages the state holds, as the session page shows messages."""
    names = ["messages", *sorted(k for k in values if k != "messages")]
    for name in names:
        value = values.get(name)
        if isinstance(value, list) and value and all(_is_message(v) for v in value):
            return name, linked([_as_message(v) for v in value])
    return None, []


def _is_message(value: Any) -> bool:
    return hasattr(value, "type") and hasattr(value, "content") and hasattr(value, "id")


def _as_message(value: Any) -> Message:
    from .._langchain_messages import to_ledger  # noqa: PLC0415 -- messages mean langchain

    return to_ledger(value)


def readable(value: Any) -> str:
    """``value`` as indented JSON, LangChain messages and models as their fields."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS,
                        default=_fields).decode()


def _fields(value: Any) -> Any:
    if _is_message(value):
        fields = {"type": value.type, "content": value.content}
        for name in ("name", "tool_calls", "tool_call_id", "id"):
            if getattr(value, name, None):
                fields[name] = getattr(value, name)
        return fields
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return repr(value)


def _short(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else f"{text[:limit]}\n... ({len(text):,} characters)"
