"""LangGraph threads, read through the chatledger saver on the same store.

A thread is listed by its index session (``lg:<length>:<thread>``), and shown
as the conversation it holds (the messages of its latest state), then as the
saver's own ``list`` gives it: every checkpoint of every namespace, oldest
first, with its parent (a checkpoint that is the parent of several is where
the thread forked; those off the latest line are marked as the other
branch), its metadata, channel values and pending writes as JSON.

Each checkpoint namespace is listed on its own, so that a stored entry of one
that cannot be decoded stops that namespace's listing alone: the page shows
what was read before it, says which entry is damaged and why, and shows the
other namespaces.
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

__all__ = ["ROOT_PREFIX", "CHECKPOINT_LIMIT", "Checkpoint", "Thread", "readable",
           "thread_checkpoints", "thread_of", "thread_of_index", "threads_page"]

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

    @property
    def forked(self) -> bool:
        return self.children > 1


@dataclass(frozen=True)
class Thread:
    """A thread as the page reads: its conversation, then each namespace's steps.

    ``conversation``: the messages of the root namespace's latest checkpoint
    (its ``messages`` channel, or the first channel holding a list of
    messages), in order. ``namespaces``: (namespace, checkpoints oldest first);
    a checkpoint off its namespace's latest line (``live`` False) is a fork's
    other branch, shown where it was stored.
    """

    id: str
    conversation: list[MessageView]
    channel: str | None  # the channel the conversation was read from
    namespaces: list[tuple[str, list[Checkpoint]]]
    damaged: list[str] = field(default_factory=list)  # each namespace the listing stopped in

    @property
    def checkpoints(self) -> list[Checkpoint]:
        return [c for _, checkpoints in self.namespaces for c in checkpoints]


async def thread_checkpoints(store: AsyncStore, thread_id: str,
                             limit: int = CHECKPOINT_LIMIT) -> Thread | None:
    """The thread's first ``limit`` checkpoints (the newest, as the saver lists them),
    None when it has none and nothing damaged."""
    from ..langgraph import AsyncLedgerSaver  # noqa: PLC0415 -- the langgraph extra

    saver = AsyncLedgerSaver(store)
    found: list[Checkpoint] = []
    damaged: list[str] = []
    latest_values: dict[str, Any] | None = None
    for ns in await _namespaces(store, thread_id):
        config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
        try:
            async for item in saver.alist(config, limit=limit - len(found)):  # type: ignore[arg-type]
                if latest_values is None and not ns:
                    latest_values = item.checkpoint["channel_values"]
                found.append(_checkpoint(item))
        except CorruptEntryError as exc:  # this namespace's older checkpoints stay unread
            damaged.append(f"{_words(thread_id, ns)}: {_core.entry_damage(exc)}; its checkpoints "
                           f"from there back are not shown")
        if len(found) >= limit:
            break
    if not found and not damaged:
        return None
    channel, messages = _conversation(latest_values or {})
    return Thread(thread_id, messages, channel, _by_namespace(found), damaged)


async def _namespaces(store: AsyncStore, thread_id: str) -> list[str]:
    """The thread's checkpoint namespaces, in the store's listing order (one listing)."""
    from ..langgraph._layout import split_session_id, thread_prefix  # noqa: PLC0415

    listed = [split_session_id(sid) async for sid in store.sessions(thread_prefix(thread_id))]
    return list(dict.fromkeys(split[1] for split in listed if split is not None))


def _words(thread_id: str, ns: str) -> str:
    from ..langgraph._layout import thread_words  # noqa: PLC0415 -- doctor's words for it

    return thread_words(thread_id, ns)


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


def _by_namespace(newest_first: list[Checkpoint]) -> list[tuple[str, list[Checkpoint]]]:
    """Each namespace's checkpoints oldest first, forks counted and the latest line marked."""
    children = Counter(c.parent for c in newest_first if c.parent is not None)
    namespaces: dict[str, list[Checkpoint]] = {}
    for checkpoint in newest_first:
        namespaces.setdefault(checkpoint.namespace, []).append(checkpoint)
    shown = []
    for ns in sorted(namespaces):  # the root ("") first
        listed = namespaces[ns]
        parents = {c.id: c.parent for c in listed}
        live: set[str] = set()
        at: str | None = listed[0].id  # the saver lists a namespace's latest first
        while at is not None and at not in live:
            live.add(at)
            at = parents.get(at)
        shown.append((ns, [replace(c, children=children[c.id], live=c.id in live)
                           for c in reversed(listed)]))
    return shown


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
