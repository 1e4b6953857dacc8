"""The rules of a checkpoint chain, with no I/O.

How a ``put`` becomes one atomic batch (:func:`checkpoint_batch`), whether a
``put`` may land where it aims (:func:`check_parent`), and how a walk from the
newest entry back finds checkpoints and the writes stored on them
(:class:`Walk`). The savers in ``_async/`` and ``_sync/`` only add the calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._errors import ConflictError
from .._filled import filled
from .._messages import Message
from ._entries import (
    CheckpointEntry,
    Entry,
    ItemsEntry,
    KeepAlive,
    Lease,
    Tombstone,
    Typed,
    ValueEntry,
    WritesEntry,
    encode,
)
from ._expiry import expired, last_sweep
from ._layout import checkpoint_message_id, value_message_id
from ._lists import Items, plan
from ._parts import split

__all__ = [
    "CheckpointConflict",
    "Found",
    "Put",
    "Walk",
    "check_parent",
    "checkpoint_batch",
    "checkpoint_put",
    "continues_run",
    "pending_writes",
]


class CheckpointConflict(ConflictError):
    """A ``put`` whose parent is not the latest checkpoint of its thread and namespace.

    Another writer stored a checkpoint after the one this run started from:
    storing this one too would fork the thread and leave one branch's turn
    unreachable from the latest checkpoint. ``.latest`` is that checkpoint's
    id (None: the namespace has none), ``.parent`` the one this put named.

    ``.input_kept``: whether this run's input is in the thread's history: with
    ``durability="sync"`` or ``"async"`` a run stores its input, and its first
    step, before its model runs, and another writer continued from that step;
    running the turn again would send the input twice. False: the run's input
    is not in the thread (it stored nothing, or another run's input replaced
    its own); run the turn again.
    """

    def __init__(self, session: str, version: int, *, thread_id: str, checkpoint_ns: str,
                 parent: str | None, latest: str | None, input_kept: bool = False) -> None:
        super().__init__(session, version, version)
        self.thread_id = thread_id
        self.checkpoint_ns = checkpoint_ns
        self.parent = parent
        self.latest = latest
        self.input_kept = input_kept
        advice = ("this run's input is in the thread, and another writer continued from "
                  "it: do not send that input again" if input_kept else
                  "this run's input is not in the thread: run the turn again from the "
                  "latest state (replay from an old checkpoint by passing its "
                  "checkpoint_id, or open the saver with allow_forks=True)")
        what = (f"the latest checkpoint is {latest!r}; another writer ran this thread at "
                "the same time" if latest is not None or parent is None else
                "the namespace holds no checkpoint now: the thread was deleted, expired or "
                "lost while this run was on it")
        self.args = (
            f"thread {thread_id!r} namespace {checkpoint_ns!r}: this checkpoint's parent is "
            f"{parent!r} but {what}; {advice}",
        )

    def kept(self, input_kept: bool) -> CheckpointConflict:
        """This refusal, saying whether the run's input is in the thread."""
        return CheckpointConflict(self.session, self.current, thread_id=self.thread_id,
                                  checkpoint_ns=self.checkpoint_ns, parent=self.parent,
                                  latest=self.latest, input_kept=input_kept)


@dataclass(frozen=True)
class Found:
    """A checkpoint found by a walk: its entry and the writes stored on it, oldest first.

    ``missing``: the seqs of writes stored before the checkpoint (its
    ``early`` ones) that the walk has not read yet; the ledger reads them.
    """

    entry: CheckpointEntry
    writes: list[WritesEntry]
    missing: list[int] = field(default_factory=list)


@dataclass
class Walk:
    """Entries fed newest first; yields each live checkpoint with its writes.

    Writes on a checkpoint are stored after it, and tombstones after what they
    delete, so by the time a walk reaches a checkpoint it has seen both;
    writes stored before their checkpoint are named by it (``early``), and
    found among the writes of the pages read so far. With
    a ``ttl``, the latest checkpoint and the keep-alives after it say when the
    namespace expires (``expiry.py``): an expired one yields nothing, and a
    walk ends (``ended``) there or after a checkpoint that started over.
    """

    ttl: float | None = None
    now: float = 0.0
    deleted: set[str] = field(default_factory=set)
    writes: dict[str, list[WritesEntry]] = field(default_factory=dict)
    writes_at: dict[int, WritesEntry] = field(default_factory=dict)
    values: dict[int, ValueEntry | ItemsEntry] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    keep_alives: list[float] = field(default_factory=list)
    leases: list[Lease] = field(default_factory=list)
    swept: float | None = None
    judged: bool = False
    expired: bool = False
    ended: bool = False

    def feed(self, entries: Sequence[Entry]) -> list[Found]:
        """Feed one page, newest first: the checkpoints it holds, as they are found."""
        # A checkpoint's early writes are older than it: index the whole page
        # first, so those in the same page are found with it.
        self.writes_at.update((e.seq, e) for e in entries if isinstance(e, WritesEntry))
        found: list[Found] = []
        for entry in entries:
            if self.ended:
                break
            if isinstance(entry, KeepAlive):
                self.keep_alives.append(entry.at)
            elif isinstance(entry, Tombstone):
                self.deleted.update(entry.checkpoint_ids)
            elif isinstance(entry, WritesEntry):
                self.writes.setdefault(entry.checkpoint_id, []).append(entry)
            elif isinstance(entry, (ValueEntry, ItemsEntry)):
                self.values[entry.seq] = entry
            elif isinstance(entry, CheckpointEntry):
                found += self._checkpoint(entry)
            elif isinstance(entry, Lease):
                self._lease(entry)
        return found

    def _lease(self, entry: Lease) -> None:
        """A run took, kept or released the thread (``runs.py``). The writes fed
        so far were stored after ``entry``: when it took the thread, those a run
        with a lower token made are void (that run had lost the thread)."""
        self.leases.append(entry)
        if entry.token is not None:
            return

        def void(write: WritesEntry) -> bool:
            return write.run is not None and write.run < entry.seq < write.seq

        self.writes = {cp: [w for w in ws if not void(w)] for cp, ws in self.writes.items()}
        self.writes_at = {s: w for s, w in self.writes_at.items() if not void(w)}

    def _checkpoint(self, entry: CheckpointEntry) -> list[Found]:
        if not self.judged:  # the latest checkpoint: is the namespace alive?
            self.judged = True
            self.swept = last_sweep(entry.swept, self.keep_alives[::-1], self.ttl)
            self.expired = self.ended = expired(self.swept, self.now, self.ttl)
            if self.expired:
                return []
        self.ended = entry.first
        if entry.checkpoint_id in self.deleted | self.seen:
            return []
        self.seen.add(entry.checkpoint_id)
        early = [self.writes_at[s] for s in entry.early if s in self.writes_at]
        missing = [s for s in entry.early if s not in self.writes_at]
        writes = self.writes.get(entry.checkpoint_id, [])
        return [Found(entry, early + writes[::-1], missing)]

    def forget_from(self, seq: int) -> None:
        """Drop values and writes stored at ``seq`` or later: checkpoints older
        than ``seq`` only point further back, so a walk going on needs them no more."""
        self.values = {s: v for s, v in self.values.items() if s < seq}
        self.writes_at = {s: w for s, w in self.writes_at.items() if s < seq}


@dataclass(frozen=True)
class Put:
    """One put's batch, and the entries it stores: the checkpoint, and the values
    (in the order of its ``fresh`` channels) stored just before it."""

    messages: list[Message]
    entry: CheckpointEntry
    values: list[ValueEntry | ItemsEntry]

    def stored(self, seq: int) -> tuple[CheckpointEntry, dict[int, ValueEntry | ItemsEntry]]:
        """The checkpoint's entry and its values' entries, the checkpoint stored at ``seq``."""
        first = seq - len(self.values)
        # Filled in (``_filled``), not replace()d: every put stores one.
        return filled(CheckpointEntry, {**self.entry.__dict__, "seq": seq}), {
            first + i: _at(value, first + i) for i, value in enumerate(self.values)}


def _at(value: ValueEntry | ItemsEntry, seq: int) -> ValueEntry | ItemsEntry:
    """``value`` stored at ``seq``; built directly, not with ``replace``: every put
    has a few, and ``replace`` costs several times a constructor."""
    if isinstance(value, ItemsEntry):
        return ItemsEntry(value.channel, value.items, value.prev, seq)
    return ValueEntry(value.channel, value.value, seq)


def check_parent(
    *, session: str, version: int, thread_id: str, checkpoint_ns: str,
    parent: str | None, latest: str | None, metadata: Mapping[str, Any],
    config: Mapping[str, Any], allow_forks: bool,
) -> None:
    """Raise CheckpointConflict unless a put with ``parent`` may follow ``latest``.

    Allowed: continuing the latest checkpoint, a fork the caller asked for,
    and a root put that does not claim to start the thread (one made through
    the saver's API directly, outside a LangGraph run). A parentless put from
    a run claims to start it: the run saw the namespace empty, and another
    writer started it meanwhile (with ``durability="exit"`` the run's only put
    is its last one).
    """
    if parent == latest or allow_forks or _asked_for_fork(metadata, config):
        return
    if parent is None and not _starts_thread(metadata, config):
        return
    raise CheckpointConflict(session, version, thread_id=thread_id, checkpoint_ns=checkpoint_ns,
                             parent=parent, latest=latest)


def _asked_for_fork(metadata: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    """Time travel: LangGraph copies the ``checkpoint_id`` a caller addressed
    (replay, ``update_state`` on an old checkpoint, a subgraph resumed from its
    own checkpoint) into the run's ``config["metadata"]``, and marks a copy
    (``as_node="__copy__"``) ``source: "fork"``. A run that only named the
    thread carries neither, so a writer that read the thread before another
    advanced it is told apart from time travel."""
    return (metadata.get("source") == "fork"
            or (config.get("metadata") or {}).get("checkpoint_id") is not None)


def continues_run(metadata: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    """Whether a put follows checkpoints its own run stored: a step of a Pregel
    run (not its input checkpoint) that stores each step as it goes (durability
    ``"sync"`` or ``"async"``; with ``"exit"`` a run's only put is its last)."""
    durability = (config.get("configurable") or {}).get("__pregel_durability")
    return metadata.get("source") == "loop" and durability in ("sync", "async")


def _starts_thread(metadata: Mapping[str, Any], config: Mapping[str, Any]) -> bool:
    """LangGraph's first input checkpoint (step -1), or any put of a Pregel run
    (its config carries the run's durability)."""
    return ((metadata.get("source") == "input" and metadata.get("step") == -1)
            or "__pregel_durability" in (config.get("configurable") or {}))


def checkpoint_batch(
    checkpoint_id: str, parent: CheckpointEntry | None, *, parent_id: str | None,
    checkpoint: Typed, metadata: Typed, channels: Iterable[str],
    new_values: Mapping[str, Typed | Items | None], prefix: str = "",
    swept: float | None = None, first: bool = False, early: Sequence[int] = (),
    max_bytes: int | None = None, run: int | None = None,
) -> list[Message]:
    """The messages of one put (see ``checkpoint_put``)."""
    return checkpoint_put(
        checkpoint_id, parent, parent_id=parent_id, checkpoint=checkpoint, metadata=metadata,
        channels=channels, new_values=new_values, prefix=prefix, swept=swept, first=first,
        early=early, max_bytes=max_bytes, run=run).messages


def checkpoint_put(
    checkpoint_id: str, parent: CheckpointEntry | None, *, parent_id: str | None,
    checkpoint: Typed, metadata: Typed, channels: Iterable[str],
    new_values: Mapping[str, Typed | Items | None], prefix: str = "",
    swept: float | None = None, first: bool = False, early: Sequence[int] = (),
    max_bytes: int | None = None, known: Mapping[int, ValueEntry | ItemsEntry] | None = None,
    run: int | None = None,
) -> Put:
    """The messages of one put: the values that changed, then the checkpoint
    (with ``max_bytes``, any too large for one message in parts first); and
    the entries they store, their seqs still to be learned from the append.

    ``channels`` are the checkpoint's channels; ``new_values`` those of this
    version (None: the channel has no value; Items: a list, stored as a delta
    on the parent's version when it only grew, see ``lists.py``). Every other
    channel keeps the value its parent pointed at. ``known``: value entries at
    their seqs, where a list's previous items may be found without hashing them.
    ``run``: the token of the run storing it, under a lease (``runs.py``).
    """
    inherited = parent.value_seqs() if parent is not None else {}
    parent_chains = parent.resolved_chains() if parent is not None else {}
    fresh = sorted(ch for ch, value in new_values.items() if value is not None)
    carried: dict[str, int | None] = {
        ch: inherited[ch] for ch in channels if ch not in new_values and ch in inherited
    }
    carried.update({ch: None for ch, value in new_values.items() if value is None})
    chains = {ch: parent_chains[ch] for ch, seq in carried.items()
              if seq is not None and ch in parent_chains}
    messages = []
    entries: list[ValueEntry | ItemsEntry] = []
    for i, ch in enumerate(fresh):
        value = new_values[ch]
        entry: ValueEntry | ItemsEntry
        if isinstance(value, Items):
            stored = plan(value, parent_chains.get(ch), inherited.get(ch), known)
            entry, chains[ch] = ItemsEntry(ch, stored.items, stored.prev), stored.chain
        else:
            assert value is not None
            entry = ValueEntry(ch, value)
        messages.append(encode(entry, value_message_id(checkpoint_id, i, prefix)))
        entries.append(entry)
    checkpoint_entry = CheckpointEntry(checkpoint_id, parent_id, checkpoint, metadata, fresh,
                                       carried, swept=swept, first=first, chains=chains,
                                       early=list(early), run=run)
    messages.append(encode(checkpoint_entry, checkpoint_message_id(checkpoint_id, prefix)))
    return Put(messages if max_bytes is None else split(messages, max_bytes), checkpoint_entry,
               entries)


def pending_writes(entries: Iterable[WritesEntry]) -> list[tuple[str, str, Typed, str, int]]:
    """The writes of one checkpoint, resolved and in ``writes_sort_key`` order.

    ``entries`` oldest first. A regular write (idx >= 0) is kept as first
    stored; a special one (ERROR, INTERRUPT, ... idx < 0) as last stored.
    Returns ``(task_id, channel, value, task_path, idx)``.
    """
    kept: dict[tuple[str, int], tuple[str, str, Typed, str, int]] = {}
    for entry in entries:
        for write in entry.writes:
            key = (entry.task_id, write.idx)
            if write.idx >= 0 and key in kept:
                continue
            kept[key] = (entry.task_id, write.channel, write.value, entry.task_path, write.idx)
    return sorted(kept.values(), key=lambda w: (w[3], w[0], w[4]))
