"""Copying threads from another LangGraph saver: the rules, with no I/O.

``copy_threads`` (``_async/copy.py`` and its generated twin) reads a thread
from any saver in two passes: a listing, kept only as an *outline* (ids,
parent links, channel versions, which task wrote what; never the values),
then each checkpoint the target lacks, fetched whole, oldest first. This
module decides, from outlines alone, what the target must store and how:

- the order (:func:`copy_order`): by checkpoint id, LangGraph's time order,
  a parent always before its children, so a copy stopped anywhere leaves
  the target as the source was at some moment, and ``list`` on the target
  yields what it yields on the source;
- the config of each put (:func:`put_config`): it addresses the parent, and
  marks the put as time travel (``config["metadata"]["checkpoint_id"]``, as
  LangGraph's own replay does) when the parent is not the latest checkpoint
  the target's namespace holds, which is how the saver tells a fork asked for
  from a writer that lost a race (``_chain.check_parent``);
- the channels a put stores (:func:`new_versions`): those whose version (or
  whether they hold a value) differs from the parent's; every other one is
  carried from the parent, as LangGraph's own puts do;
- the order of pending writes (:func:`write_groups`): one ``put_writes`` per
  task, in the source's order, which an ordering key reproduces on the target.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP, ChannelVersions, CheckpointTuple
from pydantic import BaseModel

from ._layout import check_address, check_names, thread_text

__all__ = [
    "CopyReport",
    "Outline",
    "Progress",
    "ThreadCopy",
    "ThreadDifference",
    "ThreadsNotListed",
    "copy_order",
    "new_versions",
    "outline",
    "outline_differences",
    "put_config",
    "tuple_differences",
    "unstorable",
    "write_groups",
    "writes_by_task",
]

Progress = Callable[[int, int], None]
"""A progress callback: called with (threads done, threads in all) as each one ends."""

Address = tuple[str, str]
"""``(checkpoint_ns, checkpoint_id)``: a checkpoint within its thread."""


@dataclass(frozen=True)
class Outline:
    """What a listing says of one checkpoint, without its values."""

    ns: str
    checkpoint_id: str
    parent_id: str | None
    versions: ChannelVersions
    valued: frozenset[str]  # the channels holding a value
    writes: tuple[tuple[str, str], ...]  # (task_id, channel), in the source's order
    user: str | None = None  # the user its metadata names (the target's user_key)

    @property
    def address(self) -> Address:
        return (self.ns, self.checkpoint_id)

    @property
    def tasks(self) -> list[str]:
        """The tasks that wrote on it, in order of their first write."""
        return list(dict.fromkeys(task for task, _ in self.writes))


def outline(found: CheckpointTuple, user_key: str | None = None) -> Outline:
    """The outline of a listed (or fetched) checkpoint tuple."""
    configurable = found.config["configurable"]
    parent = (found.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    user = found.metadata.get(user_key) if user_key is not None else None
    return Outline(
        ns=str(configurable.get("checkpoint_ns") or ""),
        checkpoint_id=str(configurable["checkpoint_id"]),
        parent_id=None if parent is None else str(parent),
        versions=dict(found.checkpoint["channel_versions"]),
        valued=frozenset(found.checkpoint["channel_values"]),
        writes=tuple((str(task), str(channel)) for task, channel, _ in found.pending_writes or ()),
        user=user if isinstance(user, str) else None,
    )


def copy_order(outlines: Iterable[Outline]) -> list[Outline]:
    """Oldest first by id, across namespaces, each parent before its children.

    LangGraph's ids are time-ordered (UUID v6), so sorting is enough for its
    own savers; a child sorted before its parent (ids another tool made) waits
    for it.
    """
    ordered = sorted(outlines, key=lambda o: (o.checkpoint_id, o.ns))
    present = {o.address for o in ordered}
    placed: set[Address] = set()
    waiting: dict[Address, list[Outline]] = {}
    result: list[Outline] = []

    def place(item: Outline) -> None:
        stack = [item]
        while stack:
            current = stack.pop()
            result.append(current)
            placed.add(current.address)
            stack.extend(reversed(waiting.pop(current.address, [])))

    for item in ordered:
        parent = (item.ns, item.parent_id) if item.parent_id is not None else None
        if parent is not None and parent in present and parent not in placed:
            waiting.setdefault(parent, []).append(item)
        else:
            place(item)
    return result


def new_versions(item: Outline, parent: Outline | None) -> ChannelVersions:
    """The channels a put of ``item`` stores: all of them without its parent on
    the target, else those whose version, or holding a value, changed."""
    if parent is None:
        return dict(item.versions)
    return {ch: version for ch, version in item.versions.items()
            if parent.versions.get(ch) != version or (ch in item.valued) != (ch in parent.valued)}


def put_config(thread_id: str, item: Outline, latest: str | None,
               user: tuple[str, str] | None) -> RunnableConfig:
    """The config of the put that stores ``item`` after ``latest`` (its namespace's
    latest checkpoint on the target); ``user``: (user_key, user) to tag the thread with."""
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": item.ns}
    if item.parent_id is not None:
        configurable["checkpoint_id"] = item.parent_id
    if user is not None:
        configurable[user[0]] = user[1]
    config: RunnableConfig = {"configurable": configurable}
    if item.parent_id != latest:  # a fork on the source: time travel, as LangGraph asks it
        config["metadata"] = {"checkpoint_id": item.parent_id or item.checkpoint_id}
    return config


def write_groups(writes: Sequence[tuple[str, str, Any]], skip: Iterable[str] = (),
                 paths: Mapping[str, str] | None = None,
                 ) -> list[tuple[str, str, list[tuple[str, Any]]]]:
    """``(task_id, task_path, writes)`` for one ``put_writes`` each, in the source's order.

    The target sorts a checkpoint's writes by task path, then task, then
    index. ``paths``: the source's own task paths (``_task_paths.py``), kept
    when it gives a path for every task, so that writes a rerun task stores
    after the copy sort among them as on the source. Otherwise (a listing does
    not carry them) each task gets a path that sorts in the source's order: a
    zero-padded rank, ahead of LangGraph's own paths, which start with ``~``.
    ``skip``: tasks whose writes the target holds already.
    """
    grouped: dict[str, list[tuple[str, Any]]] = {}
    for task, channel, value in writes:
        grouped.setdefault(str(task), []).append((channel, value))
    skipped = set(skip)
    kept = paths if paths is not None and all(paths.get(task) for task in grouped) else None
    return [(task, kept[task] if kept else f"{rank:06d}", task_writes)
            for rank, (task, task_writes) in enumerate(grouped.items())
            if task not in skipped]


NOT_ON_SOURCE = "the source holds no checkpoint of it"
"""Why a thread named that the source does not hold is not copied."""


@dataclass(frozen=True)
class ThreadCopy:
    """What the copy of one thread did (in a dry run: would do)."""

    thread_id: str
    checkpoints: int = 0  # stored now
    writes: int = 0  # pending writes stored now
    present: int = 0  # checkpoints the target held already
    namespaces: int = 0  # the thread's namespaces on the source: "" and its subgraphs'
    changed: bool = False  # the source thread changed while it was copied
    refused: str | None = None  # why the thread was not copied, or not whole

    def __str__(self) -> str:
        if self.refused is not None:
            return f"{self.thread_id}: {self.refused}"
        return f"{self.thread_id}: written on the source during the copy; copy it again"


@dataclass
class CopyReport:
    """What ``copy_threads`` did, thread by thread."""

    dry_run: bool
    threads: list[ThreadCopy] = field(default_factory=list)

    @property
    def checkpoints(self) -> int:
        return sum(t.checkpoints for t in self.threads)

    @property
    def writes(self) -> int:
        return sum(t.writes for t in self.threads)

    @property
    def present(self) -> int:
        return sum(t.present for t in self.threads)

    @property
    def found(self) -> list[ThreadCopy]:
        """The threads the source holds (a thread named that it does not hold is refused)."""
        return [t for t in self.threads if t.refused != NOT_ON_SOURCE]

    @property
    def changed(self) -> list[ThreadCopy]:
        """The threads written on the source while they were copied: copy them again."""
        return [t for t in self.threads if t.changed and t.refused is None]

    @property
    def refused(self) -> list[ThreadCopy]:
        """The threads not copied, or not whole, each saying why."""
        return [t for t in self.threads if t.refused is not None]

    @property
    def ok(self) -> bool:
        return not self.changed and not self.refused

    def summary(self) -> str:
        """The report for a person, one fact a line."""
        verb = "would copy" if self.dry_run else "copied"
        lines = [
            f"{_count(len(self.found), 'thread')} found",
            f"{verb} {_count(self.checkpoints, 'checkpoint')} and "
            f"{_count(self.writes, 'pending write')}",
            f"{_count(self.present, 'checkpoint')} already in chatledger",
        ]
        if self.changed:
            lines.append(f"{_count(len(self.changed), 'thread')} written on the source during "
                         "the copy (copy again once it stops):")
            lines.extend(f"  {t.thread_id}" for t in self.changed)
        if self.refused:
            lines.append(f"{_count(len(self.refused), 'thread')} not copied:")
            lines.extend(f"  {t}" for t in self.refused)
        return "\n".join(lines)


class ThreadsNotListed(ValueError):
    """The source could not list its threads (a saver that cannot, or a checkpoint
    it cannot load): name them with ``thread_ids``. ``cause``: the source's own words
    (its class, the error's class and message)."""

    def __init__(self, cause: str) -> None:
        self.cause = cause
        super().__init__(self.telling("thread_ids"))

    def telling(self, option: str) -> str:
        """The error, telling to name the threads with ``option`` (the CLI's own)."""
        return (f"{self.cause}: name them with {option} (a saver that cannot list all of "
                "them, as DynamoDBSaver, needs that; with a checkpoint that does not load, "
                "the threads named are copied and that one reported)")


@dataclass(frozen=True)
class ThreadDifference:
    """Where a thread differs between the source and the target."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str | None  # None: the namespace's order of checkpoints differs
    what: str

    def __str__(self) -> str:
        ns = f" namespace {self.checkpoint_ns!r}" if self.checkpoint_ns else ""
        at = f" checkpoint {self.checkpoint_id}" if self.checkpoint_id else ""
        return f"thread {self.thread_id!r}{ns}{at}: {self.what}"


_FIELDS = (("metadata", "its metadata"), ("parent_config", "its parent"),
           ("checkpoint", "its state"), ("pending_writes", "its pending writes"))


def unstorable(thread_id: str, outlines: Iterable[Outline]) -> str | None:
    """Why the target cannot hold a thread's ids or names (a NUL, a lone surrogate, a
    thread id and namespace too long together, in a checkpoint's address or its
    writes' tasks and channels), checked for every checkpoint before anything of the
    thread is copied; None: it can."""
    try:
        thread_text(thread_id)
        for item in outlines:
            check_address(thread_id, *item.address)
            for task, channel in item.writes:
                check_names(task, "", [channel])
    except ValueError as exc:
        return f"the target cannot hold its ids: {exc}"
    return None


def outline_differences(thread_id: str, theirs: Mapping[Address, Outline],
                        ours: Mapping[Address, Outline]) -> list[ThreadDifference]:
    """Checkpoints missing on the target or on the target only, and namespaces
    whose checkpoints the two list in another order (outlines in listing order)."""
    found = [ThreadDifference(thread_id, *address, "missing on the target")
             for address in theirs.keys() - ours.keys()]
    found += [ThreadDifference(thread_id, *address, "on the target only")
              for address in ours.keys() - theirs.keys()]
    their_order, our_order = _orders(theirs), _orders(ours)
    found += [ThreadDifference(thread_id, ns, None, "listed in another order")
              for ns, ids in their_order.items()
              if set(ids) == set(our_order.get(ns, ())) and ids != our_order[ns]]
    return sorted(found, key=lambda d: (d.checkpoint_ns, d.checkpoint_id or "", d.what))


def tuple_differences(thread_id: str, theirs: CheckpointTuple,
                      ours: CheckpointTuple) -> list[ThreadDifference]:
    """How one checkpoint differs: its metadata, parent, state or pending writes."""
    configurable = theirs.config["configurable"]
    ns, checkpoint_id = str(configurable.get("checkpoint_ns") or ""), configurable["checkpoint_id"]
    return [ThreadDifference(thread_id, ns, str(checkpoint_id), f"{label} differs")
            for name, label in _FIELDS if not same(_field(theirs, name), _field(ours, name))]


def same(theirs: Any, ours: Any) -> bool:
    """Whether two values read back are the same: ``==``, where a NaN is the same as a
    NaN (``==`` says a state holding one differs from its exact copy)."""
    if theirs == ours:
        return True
    if isinstance(theirs, float) and isinstance(ours, float):
        return math.isnan(theirs) and math.isnan(ours)
    if type(theirs) is not type(ours):
        return False
    if isinstance(theirs, Mapping):
        return theirs.keys() == ours.keys() and all(same(v, ours[k]) for k, v in theirs.items())
    if isinstance(theirs, (list, tuple)):
        return len(theirs) == len(ours) and all(map(same, theirs, ours))
    if isinstance(theirs, BaseModel):  # a message: its fields, a NaN among them
        return same(theirs.model_dump(), ours.model_dump())
    if dataclasses.is_dataclass(theirs) and not isinstance(theirs, type):
        return same(dataclasses.asdict(theirs), dataclasses.asdict(ours))
    return False


def _orders(outlines: Mapping[Address, Outline]) -> dict[str, list[str]]:
    orders: dict[str, list[str]] = {}
    for ns, checkpoint_id in outlines:
        orders.setdefault(ns, []).append(checkpoint_id)
    return orders


def _field(found: CheckpointTuple, name: str) -> Any:
    value = getattr(found, name)
    if name == "parent_config":  # savers add keys of their own; the parent is its id
        return None if value is None else value["configurable"].get("checkpoint_id")
    if name == "pending_writes":
        return writes_by_task(value or ())
    return value


def writes_by_task(writes: Iterable[tuple[str, str, Any]]) -> dict[str, list[tuple[str, Any]]]:
    """A checkpoint's pending writes as every saver agrees on them: per task, its
    writes in order, the special ones (interrupt, resume, error...) by their
    index. Savers differ in how they order tasks, and the special writes of one."""
    regular: dict[str, list[tuple[str, Any]]] = {}
    special: dict[str, list[tuple[str, Any]]] = {}
    for task, channel, value in writes:
        kept = special if channel in WRITES_IDX_MAP else regular
        kept.setdefault(str(task), []).append((channel, value))
        regular.setdefault(str(task), [])
    return {task: sorted(special.get(task, []), key=lambda w: WRITES_IDX_MAP[w[0]]) + kept
            for task, kept in regular.items()}


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def user_of(outlines: Iterable[Outline]) -> str | None:
    """The user a thread belongs to: the one its oldest checkpoint naming one names."""
    named = [o for o in outlines if o.user is not None]
    return min(named, key=lambda o: o.checkpoint_id).user if named else None


def namespaces(outlines: Iterable[Outline]) -> int:
    return len({o.ns for o in outlines})


def present_in(outlines: Mapping[Address, Outline]) -> dict[str, str]:
    """Each namespace's latest checkpoint among a target's outlines, listed newest first."""
    latest: dict[str, str] = {}
    for ns, checkpoint_id in outlines:
        latest.setdefault(ns, checkpoint_id)
    return latest
