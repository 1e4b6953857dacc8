"""The entries of a checkpoint ledger, and their exact encoding as messages.

Seven kinds of entry, each one chatledger message whose ``metadata`` carries
the fields (``content`` is a short label, for ``chatledger show``):

- a **value**: one channel's value at one version, as the serializer made it;
- **items**: a list value, item by item: either the whole list (a snapshot)
  or only the items appended since the version stored at seq ``prev`` (a
  delta; ``lists.py`` says when);
- a **checkpoint**: the checkpoint without its channel values, its metadata,
  its parent's id, the seqs of writes on it that were stored before it
  (``early``: LangGraph does not wait for ``put`` before ``put_writes``),
  and where the value of each of its channels is: the seqs
  of value entries stored with it (``fresh``, the entries just before it in
  its batch) or earlier (``carried``, from its parent), so a channel that did
  not change is never stored again; and for each channel whose value is
  stored as items, its ``Chain`` (where its snapshot is, how many items it
  has and their digest), so the next put can tell whether it only grew;
- **writes**: the writes of one task on one checkpoint (one ``put_writes``);
- a **tombstone**: checkpoints deleted by ``delete_for_runs``;
- a **keep-alive**: the thread was swept at ``at`` (see ``expiry.py``);
- a **namespace** (in the thread's index only): the namespace exists.

A checkpoint also records ``swept``, the thread's last sweep its put knew of,
and ``first``: the namespace had expired, nothing older belongs to it.

Serialized values are bytes; they travel as base64 text, so they come back
byte for byte (chatledger stores JSON exactly or refuses it).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Union

from ..errors import CorruptEntryError
from ..messages import JSON, Message

__all__ = [
    "FORMAT",
    "Chain",
    "CheckpointEntry",
    "Entry",
    "ItemsEntry",
    "KeepAlive",
    "NamespaceEntry",
    "Tombstone",
    "Typed",
    "ValueEntry",
    "Write",
    "WritesEntry",
    "decode",
    "encode",
]

FORMAT = 1
"""The version of this encoding, stored in every entry."""

Typed = tuple[str, bytes]
"""What a LangGraph serializer's ``dumps_typed`` makes."""


@dataclass(frozen=True)
class ValueEntry:
    channel: str
    value: Typed
    seq: int = 0


@dataclass(frozen=True)
class ItemsEntry:
    """A list value's items: all of them (``prev`` None), or those appended to
    the version stored at seq ``prev``."""

    channel: str
    items: list[Typed]
    prev: int | None = None
    seq: int = 0


@dataclass(frozen=True)
class Chain:
    """How a list value is stored: the seq of its snapshot (None: the value's
    own entry is the snapshot), its length and the digest of its items, and
    the bytes of the snapshot and of the deltas stored since."""

    snap: int | None
    items: int
    digest: str
    snap_bytes: int
    delta_bytes: int

    def at(self, head: int) -> Chain:
        """This chain with its snapshot's seq made absolute, for a value stored at ``head``."""
        return self if self.snap is not None else replace(self, snap=head)

    def shifted(self, offset: int) -> Chain:
        return self if self.snap is None else replace(self, snap=self.snap + offset)


@dataclass(frozen=True)
class CheckpointEntry:
    checkpoint_id: str
    parent_id: str | None
    checkpoint: Typed
    metadata: Typed
    fresh: list[str]
    carried: dict[str, int | None]
    seq: int = 0
    swept: float | None = None
    first: bool = False
    chains: dict[str, Chain] = field(default_factory=dict)
    early: list[int] = field(default_factory=list)

    def value_seqs(self) -> dict[str, int | None]:
        """Channel -> seq of the entry holding its value (None: no value)."""
        first = self.seq - len(self.fresh)
        return {**self.carried, **{ch: first + i for i, ch in enumerate(self.fresh)}}

    def resolved_chains(self) -> dict[str, Chain]:
        """The chains of this checkpoint's list values, every snapshot seq absolute."""
        seqs = self.value_seqs()
        return {ch: chain.at(seq) for ch, chain in self.chains.items()
                if (seq := seqs.get(ch)) is not None}


@dataclass(frozen=True)
class Write:
    idx: int
    channel: str
    value: Typed


@dataclass(frozen=True)
class WritesEntry:
    checkpoint_id: str
    task_id: str
    task_path: str
    writes: list[Write]
    seq: int = 0


@dataclass(frozen=True)
class Tombstone:
    checkpoint_ids: list[str] = field(default_factory=list)
    seq: int = 0


@dataclass(frozen=True)
class KeepAlive:
    at: float
    seq: int = 0


@dataclass(frozen=True)
class NamespaceEntry:
    checkpoint_ns: str
    swept: float | None
    seq: int = 0


Entry = Union[  # noqa: UP007
    ValueEntry, ItemsEntry, CheckpointEntry, WritesEntry, Tombstone, KeepAlive, NamespaceEntry]


def encode(entry: Entry, message_id: str) -> Message:
    """The message that stores ``entry`` under ``message_id``."""
    if isinstance(entry, ValueEntry):
        fields: dict[str, JSON] = {"ch": entry.channel, "val": _typed(entry.value)}
        label = f"value of {entry.channel}"
    elif isinstance(entry, ItemsEntry):
        fields = {"ch": entry.channel, "items": [_typed(item) for item in entry.items],
                  "prev": entry.prev}
        label = f"{len(entry.items)} items of {entry.channel}"
    elif isinstance(entry, CheckpointEntry):
        fields = {
            "id": entry.checkpoint_id, "parent": entry.parent_id,
            "cp": _typed(entry.checkpoint), "md": _typed(entry.metadata),
            "fresh": list(entry.fresh), "carried": dict(entry.carried),
            "swept": entry.swept, "first": entry.first,
            "chains": {ch: [c.snap, c.items, c.digest, c.snap_bytes, c.delta_bytes]
                       for ch, c in entry.chains.items()},
        }
        if entry.early:  # rare: left out otherwise, as older entries never had it
            fields["early"] = list(entry.early)
        label = f"checkpoint {entry.checkpoint_id}"
    elif isinstance(entry, WritesEntry):
        fields = {
            "cp": entry.checkpoint_id, "task": entry.task_id, "path": entry.task_path,
            "writes": [[w.idx, w.channel, *_typed(w.value)] for w in entry.writes],
        }
        label = f"writes of task {entry.task_id}"
    elif isinstance(entry, Tombstone):
        fields = {"ids": list(entry.checkpoint_ids)}
        label = "checkpoints deleted"
    elif isinstance(entry, KeepAlive):
        fields = {"at": entry.at}
        label = "thread kept alive"
    else:
        fields = {"ns": entry.checkpoint_ns, "swept": entry.swept}
        label = f"namespace {entry.checkpoint_ns!r}"
    kind = type(entry).__name__
    return Message(role="system", content=label, id=message_id,
                   metadata={"langgraph": FORMAT, "kind": kind, **fields})


def decode(session: str, message: Message) -> Entry | None:
    """The entry a message stores; None for a message that is no entry of ours."""
    meta = message.metadata
    if meta.get("langgraph") != FORMAT:
        return None
    seq = message.seq or 0
    try:
        return _DECODERS[str(meta["kind"])](meta, seq)
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptEntryError(session, seq, f"not a checkpoint ledger entry: {exc!r}") from exc


def _typed(value: Typed) -> list[JSON]:
    kind, data = value
    return [kind, base64.b64encode(data).decode("ascii")]


def _untyped(raw: Any) -> Typed:
    kind, text = raw
    return str(kind), base64.b64decode(text, validate=True)


def _value(meta: Mapping[str, Any], seq: int) -> ValueEntry:
    return ValueEntry(str(meta["ch"]), _untyped(meta["val"]), seq)


def _items(meta: Mapping[str, Any], seq: int) -> ItemsEntry:
    prev = meta["prev"]
    if prev is not None and not 0 < int(prev) < seq:
        raise ValueError(f"items entry {seq} continues entry {prev}, which is not before it")
    items: Sequence[Any] = meta["items"]
    return ItemsEntry(str(meta["ch"]), [_untyped(item) for item in items],
                      None if prev is None else int(prev), seq)


def _chain(raw: Sequence[Any]) -> Chain:
    snap, items, digest, snap_bytes, delta_bytes = raw
    return Chain(None if snap is None else int(snap), int(items), str(digest),
                 int(snap_bytes), int(delta_bytes))


def _checkpoint(meta: Mapping[str, Any], seq: int) -> CheckpointEntry:
    parent = meta["parent"]
    return CheckpointEntry(
        checkpoint_id=str(meta["id"]), parent_id=None if parent is None else str(parent),
        checkpoint=_untyped(meta["cp"]), metadata=_untyped(meta["md"]),
        fresh=[str(ch) for ch in meta["fresh"]],
        carried={str(ch): None if s is None else int(s) for ch, s in meta["carried"].items()},
        seq=seq, swept=_time(meta.get("swept")), first=bool(meta.get("first", False)),
        chains={str(ch): _chain(raw) for ch, raw in meta.get("chains", {}).items()},
        early=[_before(int(s), seq) for s in meta.get("early", ())],
    )


def _before(pointer: int, seq: int) -> int:
    if not 0 < pointer < seq:
        raise ValueError(f"entry {seq} points at entry {pointer}, which is not before it")
    return pointer


def _writes(meta: Mapping[str, Any], seq: int) -> WritesEntry:
    writes = [Write(int(idx), str(ch), _untyped((kind, text)))
              for idx, ch, kind, text in meta["writes"]]
    return WritesEntry(str(meta["cp"]), str(meta["task"]), str(meta["path"]), writes, seq)


def _tombstone(meta: Mapping[str, Any], seq: int) -> Tombstone:
    ids: Sequence[Any] = meta["ids"]
    return Tombstone([str(i) for i in ids], seq)


def _keep_alive(meta: Mapping[str, Any], seq: int) -> KeepAlive:
    return KeepAlive(float(meta["at"]), seq)


def _namespace(meta: Mapping[str, Any], seq: int) -> NamespaceEntry:
    return NamespaceEntry(str(meta["ns"]), _time(meta["swept"]), seq)


def _time(raw: Any) -> float | None:
    return None if raw is None else float(raw)


_DECODERS: dict[str, Callable[[Mapping[str, Any], int], Entry]] = {
    "ValueEntry": _value,
    "ItemsEntry": _items,
    "CheckpointEntry": _checkpoint,
    "WritesEntry": _writes,
    "Tombstone": _tombstone,
    "KeepAlive": _keep_alive,
    "NamespaceEntry": _namespace,
}
