"""``acopy_threads``: every thread of any LangGraph saver into the ``AsyncLedgerSaver`` given.

The source of ``_sync/copy.py`` (``copy_threads``). Only the savers' public
methods are used: the source's ``alist`` and ``aget_tuple``, the target's
``alist``, ``aput`` and ``aput_writes``. The rules (order, forks, which
channels a put stores, the order of writes) are in ``_copying.py``.

A thread costs one listing of the source (an outline: no values kept), one
``aget_tuple`` per checkpoint the target lacks, one put and one put of writes
per task, then one more listing to see whether the source changed meanwhile.
Memory holds one thread's outline and one checkpoint at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

from ..._errors import (
    BackendError,
    ConflictError,
    InvalidMessage,
    MemoryLostError,
    SessionUserError,
)
from .._copying import (
    NOT_ON_SOURCE,
    Address,
    CopyReport,
    Outline,
    Progress,
    ThreadCopy,
    ThreadDifference,
    ThreadsNotListed,
    copy_order,
    namespaces,
    new_versions,
    outline,
    outline_differences,
    present_in,
    put_config,
    tuple_differences,
    unstorable,
    user_of,
    write_groups,
)
from .._task_paths import atask_paths
from .saver import AsyncLedgerSaver

__all__ = ["acompare_threads", "acopy_threads"]

_REFUSALS = (ConflictError, InvalidMessage, MemoryLostError, SessionUserError, ValueError)
"""What stops one thread's copy, reported with it: the others go on (ValueError: the
saver refusing what it was given, as LangGraph's savers do)."""


async def acopy_threads(
    source: BaseCheckpointSaver[Any], target: AsyncLedgerSaver, *,
    thread_ids: Iterable[str] | None = None, dry_run: bool = False,
    on_progress: Progress | None = None,
) -> CopyReport:
    """Copy threads, every checkpoint of every namespace with its metadata, parent
    and pending writes, from ``source`` into ``target``, keeping every id.

    ``thread_ids``: the threads to copy (default: every thread, found by
    ``source.alist(None)``; a saver that cannot list all its threads needs
    them). Copying again stores only what the target lacks, so a copy that
    was stopped is finished by running it again. A thread written on the
    source while it was copied is reported in ``CopyReport.changed``: the
    target holds it as it was at some moment, and copying it again brings the
    rest. A thread the target holds other checkpoints of is left alone and
    reported in ``CopyReport.refused``, as is one the target refuses.
    """
    chosen = await _chosen(source, thread_ids)
    report = CopyReport(dry_run)
    if on_progress is not None:
        on_progress(0, len(chosen))
    for done, thread_id in enumerate(chosen):
        report.threads.append(await _copy_thread(source, target, thread_id, dry_run))
        if on_progress is not None:
            on_progress(done + 1, len(chosen))
    return report


async def acompare_threads(
    source: BaseCheckpointSaver[Any], target: BaseCheckpointSaver[Any], *,
    thread_ids: Iterable[str] | None = None, on_progress: Progress | None = None,
) -> list[ThreadDifference]:
    """Where the threads differ between the two savers, thread by thread: a
    checkpoint missing or extra, listed in another order, or with other
    metadata, parent, state (values, versions) or pending writes. Empty: the
    same ``alist`` (and so the same ``get_state_history``) on both."""
    chosen = await _chosen(source, thread_ids)
    found: list[ThreadDifference] = []
    if on_progress is not None:
        on_progress(0, len(chosen))
    for done, thread_id in enumerate(chosen):
        found += await _compare_thread(source, target, thread_id)
        if on_progress is not None:
            on_progress(done + 1, len(chosen))
    return found


async def _chosen(source: BaseCheckpointSaver[Any], thread_ids: Iterable[str] | None) -> list[str]:
    if thread_ids is not None:
        return list(dict.fromkeys(str(t) for t in thread_ids))
    try:
        return list(dict.fromkeys([str(t.config["configurable"]["thread_id"])
                                   async for t in source.alist(None)]))
    except BackendError:
        raise
    except Exception as exc:  # DynamoDBSaver: ValueError; any saver: a checkpoint that
        # does not load stops its listing of every thread
        raise ThreadsNotListed(f"{type(source).__name__} could not list its threads "
                               f"({type(exc).__name__}: {exc})") from exc


@contextmanager
def _reading_source() -> Iterator[None]:
    """Turn a failure of the source's own (a checkpoint it cannot load) into
    _Unreadable: that thread is reported, the others copied. A store that cannot
    answer stops the run."""
    try:
        yield
    # Our store down, a sync-only saver under acopy (a misuse), or the source's
    # connection lost: the run stops, as every thread after would fail alike.
    except (BackendError, NotImplementedError, OSError, TimeoutError):
        raise
    except Exception as exc:
        raise _Unreadable(f"the source cannot read it ({type(exc).__name__}: {exc})") from exc


async def _source_paths(source: BaseCheckpointSaver[Any], thread_id: str,
                        item: Outline) -> dict[str, str] | None:
    """The source's task paths of the checkpoint's writes (``_task_paths.py``); None when
    it does not say: they only order the writes, so a failure reading them (a table laid
    out otherwise) keeps the copy's own order rather than stopping it."""
    try:
        return await atask_paths(source, thread_id, item.ns, item.checkpoint_id)
    except Exception:  # a table laid out otherwise: the ranks serve
        return None


class _Unreadable(Exception):
    """The source failed reading a thread."""


async def _copy_thread(source: BaseCheckpointSaver[Any], target: AsyncLedgerSaver,
                       thread_id: str, dry_run: bool) -> ThreadCopy:
    try:
        with _reading_source():
            theirs = await _outlines(source, thread_id, target.user_key)
    except _Unreadable as exc:
        return ThreadCopy(thread_id, refused=f"{exc}; nothing of it copied")
    if not theirs:  # a thread id mistyped, or gone: nothing copied is no success
        return ThreadCopy(thread_id, refused=NOT_ON_SOURCE)
    refused = unstorable(thread_id, theirs.values())
    if refused is not None:
        return ThreadCopy(thread_id, namespaces=namespaces(theirs.values()),
                          refused=f"{refused}; nothing of it copied")
    ours = await _outlines(target, thread_id, None)
    extra = ours.keys() - theirs.keys()
    if extra:
        return ThreadCopy(thread_id, present=len(ours.keys() & theirs.keys()),
                          namespaces=namespaces(theirs.values()),
                          refused=f"the target holds {len(extra):,} checkpoint(s) the source "
                                  "has not; left alone")
    copy = _ThreadWrite(source, target, thread_id, theirs, ours, dry_run=dry_run)
    try:
        complete = await copy.run()
    except _REFUSALS as exc:
        return copy.outcome(refused=f"{type(exc).__name__}: {exc}")
    except _Unreadable as exc:
        return copy.outcome(refused=f"{exc}; what came before it is copied")
    if dry_run:
        return copy.outcome()
    try:
        with _reading_source():
            changed = not complete or (
                await _outlines(source, thread_id, target.user_key)) != theirs
    except _Unreadable as exc:
        return copy.outcome(refused=str(exc))
    return copy.outcome(changed=changed)


class _ThreadWrite:
    """The puts that bring one thread's copy on the target up to its source's outline."""

    def __init__(self, source: BaseCheckpointSaver[Any], target: AsyncLedgerSaver,
                 thread_id: str, theirs: dict[Address, Outline], ours: dict[Address, Outline],
                 *, dry_run: bool) -> None:
        self.source, self.target, self.thread_id = source, target, thread_id
        self.theirs, self.ours, self.dry_run = theirs, ours, dry_run
        self.latest = present_in(ours)
        user = user_of(theirs.values())
        self.user = None if user is None or target.user_key is None else (target.user_key, user)
        self.checkpoints = self.writes = 0

    async def run(self) -> bool:
        """Store what the target lacks, oldest first; False: a checkpoint vanished
        from the source meanwhile (the copy stopped there)."""
        for item in copy_order(self.theirs.values()):
            held = self.ours.get(item.address)
            tasks = _missing_tasks(item, held)
            if held is not None and not tasks:
                continue
            if self.dry_run:
                self.checkpoints += held is None
                self.writes += sum(1 for task, _ in item.writes if task in tasks)
                continue
            with _reading_source():
                found = await self.source.aget_tuple(_address(self.thread_id, item))
            if found is None:
                return False
            if held is None:
                await self._put(item, found)
            await self._put_writes(item, found, tasks)
        return True

    async def _put(self, item: Outline, found: CheckpointTuple) -> None:
        # A parent the source lists was stored before (copy_order); one it has
        # lost is not on the target either, and the put stores every channel.
        parent = self.theirs.get((item.ns, item.parent_id)) if item.parent_id else None
        config = put_config(self.thread_id, item, self.latest.get(item.ns), self._user(item))
        await self.target.aput(config, found.checkpoint, found.metadata,
                               new_versions(item, parent))
        self.ours[item.address] = item
        self.latest[item.ns] = item.checkpoint_id
        self.checkpoints += 1

    async def _put_writes(self, item: Outline, found: CheckpointTuple, tasks: set[str]) -> None:
        user = self._user(item)
        configurable: dict[str, Any] = {"thread_id": self.thread_id, "checkpoint_ns": item.ns,
                                        "checkpoint_id": item.checkpoint_id}
        if user is not None:
            configurable[user[0]] = user[1]
        config: RunnableConfig = {"configurable": configurable}
        present = {task for task in item.tasks if task not in tasks}
        paths = await _source_paths(self.source, self.thread_id, item) if tasks else None
        for task, path, writes in write_groups(found.pending_writes or (), skip=present,
                                               paths=paths):
            await self.target.aput_writes(config, writes, task, path)
            self.writes += len(writes)

    def _user(self, item: Outline) -> tuple[str, str] | None:
        """The thread's user, for a checkpoint whose metadata names it: passing it
        on another one would add it to that checkpoint's metadata."""
        return self.user if self.user is not None and item.user == self.user[1] else None

    def outcome(self, *, changed: bool = False, refused: str | None = None) -> ThreadCopy:
        present = sum(1 for address in self.theirs if address in self.ours) - self.checkpoints
        return ThreadCopy(self.thread_id, checkpoints=self.checkpoints, writes=self.writes,
                          present=present if not self.dry_run else len(
                              self.theirs.keys() & self.ours.keys()),
                          namespaces=namespaces(self.theirs.values()), changed=changed,
                          refused=refused)


def _missing_tasks(item: Outline, held: Outline | None) -> set[str]:
    """The tasks whose writes on ``item`` the target lacks, or holds otherwise."""
    if held is None:
        return set(item.tasks)
    return {task for task in item.tasks if _task_writes(item, task) != _task_writes(held, task)}


def _task_writes(item: Outline, task: str) -> list[str]:
    """The channels one task wrote, in an order every saver agrees on."""
    return sorted(channel for t, channel in item.writes if t == task)


async def _outlines(saver: BaseCheckpointSaver[Any], thread_id: str,
                    user_key: str | None) -> dict[Address, Outline]:
    """The outline of every checkpoint of a thread, in the saver's listing order."""
    listed: dict[Address, Outline] = {}
    async for found in saver.alist({"configurable": {"thread_id": thread_id}}):
        item = outline(found, user_key)
        listed[item.address] = item
    return listed


def _address(thread_id: str, item: Outline) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": item.ns,
                             "checkpoint_id": item.checkpoint_id}}


async def _compare_thread(source: BaseCheckpointSaver[Any], target: BaseCheckpointSaver[Any],
                          thread_id: str) -> list[ThreadDifference]:
    """Outlines first (what is missing, extra or out of order), then the checkpoints
    both hold, namespace by namespace: memory holds one pair at a time."""
    try:
        with _reading_source():
            theirs = await _outlines(source, thread_id, None)
    except _Unreadable as exc:
        return [ThreadDifference(thread_id, "", None, str(exc))]
    refused = unstorable(thread_id, theirs.values())
    if refused is not None:  # the target can hold none of it: nothing to list there
        return [ThreadDifference(thread_id, "", None, f"{refused}; not on the target")]
    ours = await _outlines(target, thread_id, None)
    found = outline_differences(thread_id, theirs, ours)
    for ns in sorted({ns for ns, _ in theirs}):
        their_ids = [i for n, i in theirs if n == ns]
        config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns}}
        if their_ids == [i for n, i in ours if n == ns]:
            found += await _compare_listed(thread_id, source, target, config)
        else:  # the differences are known; compare what both hold, one fetch each
            found += await _compare_fetched(thread_id, source, target, config, ours)
    return found


async def _compare_listed(thread_id: str, source: BaseCheckpointSaver[Any],
                          target: BaseCheckpointSaver[Any],
                          config: RunnableConfig) -> list[ThreadDifference]:
    """Both list the same checkpoints in the same order: walk the two listings together."""
    found: list[ThreadDifference] = []
    copies = aiter(target.alist(config))
    async for listed in source.alist(config):
        copied = await anext(copies, None)  # None: the target lost one since its outline
        found += (tuple_differences(thread_id, listed, copied) if copied is not None else
                  [ThreadDifference(thread_id, *outline(listed).address, "missing on the target")])
    return found


async def _compare_fetched(thread_id: str, source: BaseCheckpointSaver[Any],
                           target: BaseCheckpointSaver[Any], config: RunnableConfig,
                           ours: dict[Address, Outline]) -> list[ThreadDifference]:
    found: list[ThreadDifference] = []
    async for listed in source.alist(config):
        item = outline(listed)
        if item.address in ours:
            mine = await target.aget_tuple(_address(thread_id, item))
            assert mine is not None  # listed a moment ago
            found += tuple_differences(thread_id, listed, mine)
    return found
