"""The entries of a checkpoint ledger, and their exact encoding as messages.

Eight kinds of entry, each one chatledger message whose ``metadata`` carries
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
- a **namespace** (in the thread's index only): the namespace exists;
- a **lease** (in the thread's root namespace only): a run took, renewed or
  released the thread (``runs.py``).

A checkpoint also records ``swept``, the thread's last sweep its put knew of,
and ``first``: the namespace had expired, nothing older belongs to it. A
checkpoint and a write made under a lease record its token (``run``: the seq of
the lease entry that took the thread).

Serialized values are bytes, stored as the message's ``data`` (format 2): each
field that holds one is ``[kind, size]`` in the metadata, and its bytes follow
in ``data`` in field order, so nothing is base64'd or JSON-escaped. An entry
larger than one message may hold is split into parts (``parts.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Union

from .._errors import CorruptEntryError, InvalidMessage
from .._filled import filled
from .._messages import JSON, Message

__all__ = [
    "FORMAT",
    "Chain",
    "CheckpointEntry",
    "Entry",
    "ItemsEntry",
    "KeepAlive",
    "Lease",
    "NamespaceEntry",
    "Tombstone",
    "Typed",
    "ValueEntry",
    "Write",
    "WritesEntry",
    "decode",
    "encode",
    "is_entry",
]

FORMAT = 2
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
    run: int | None = None

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
    run: int | None = None


@dataclass(frozen=True)
class Tombstone:
    checkpoint_ids: list[str] = field(default_factory=list)
    seq: int = 0


@dataclass(frozen=True)
class KeepAlive:
    at: float
    seq: int = 0


@dataclass(frozen=True)
class Lease:
    """A run took the thread (``token`` None: this entry's seq is the run's token),
    renewed it or released it (``token``: the seq of the entry that took it),
    until ``until`` in the store's clock (None: released)."""

    run: str
    token: int | None
    until: float | None
    seq: int = 0

    @property
    def holder(self) -> int:
        """The token of the run this entry is about."""
        return self.seq if self.token is None else self.token


@dataclass(frozen=True)
class NamespaceEntry:
    checkpoint_ns: str
    swept: float | None
    seq: int = 0


Entry = Union[  # noqa: UP007
    ValueEntry, ItemsEntry, CheckpointEntry, WritesEntry, Tombstone, KeepAlive, NamespaceEntry,
    Lease]


def encode(entry: Entry, message_id: str) -> Message:
    """The message that stores ``entry`` under ``message_id`` (whole: see ``parts.py``)."""
    data = _Packer()
    if isinstance(entry, ValueEntry):
        fields: dict[str, JSON] = {"ch": entry.channel, "val": data.add(entry.value)}
        label = f"value of {entry.channel}"
    elif isinstance(entry, ItemsEntry):
        fields = {"ch": entry.channel, "items": [data.add(item) for item in entry.items],
                  "prev": entry.prev}
        label = f"{len(entry.items)} items of {entry.channel}"
    elif isinstance(entry, CheckpointEntry):
        fields = _checkpoint_fields(entry, data)
        label = f"checkpoint {entry.checkpoint_id}"
    elif isinstance(entry, WritesEntry):
        fields = {
            "cp": entry.checkpoint_id, "task": entry.task_id, "path": entry.task_path,
            "writes": [[w.idx, w.channel, *data.add(w.value)] for w in entry.writes],
        }
        if entry.run is not None:
            fields["run"] = entry.run
        label = f"writes of task {entry.task_id}"
    elif isinstance(entry, Tombstone):
        fields = {"ids": list(entry.checkpoint_ids)}
        label = "checkpoints deleted"
    elif isinstance(entry, KeepAlive):
        fields = {"at": _finite(entry.at, "at")}
        label = "thread kept alive"
    elif isinstance(entry, Lease):
        fields = {"run": entry.run, "token": entry.token, "until": _finite(entry.until, "until")}
        label = f"run {entry.run} {_lease_label(entry)}"
    else:
        fields = {"ns": entry.checkpoint_ns, "swept": _finite(entry.swept, "swept")}
        label = f"namespace {entry.checkpoint_ns!r}"
    return own_message(label, message_id, {"langgraph": FORMAT, "kind": type(entry).__name__,
                                           **fields}, data.joined())


def own_message(label: str, message_id: str, metadata: dict[str, JSON],
                data: bytes | None) -> Message:
    """The system message that stores an entry, the same as ``Message(role="system", ...)``
    but filled in directly (``_filled``): every put and put_writes builds some, and
    the dataclass's ``__init__`` (its default factories, a setattr per field) costs
    more than encoding the entry."""
    return filled(Message, {
        "role": "system", "content": label, "id": message_id, "name": None,
        "tool_calls": [], "tool_call_id": None, "metadata": metadata,
        "created_at": _now(_UTC), "data": data, "seq": None,
    })


_now = datetime.now
_UTC = timezone.utc


def _checkpoint_fields(entry: CheckpointEntry, data: _Packer) -> dict[str, JSON]:
    fields: dict[str, JSON] = {
        "id": entry.checkpoint_id, "parent": entry.parent_id,
        "cp": data.add(entry.checkpoint), "md": data.add(entry.metadata),
        "fresh": list(entry.fresh), "carried": dict(entry.carried),
        "swept": _finite(entry.swept, "swept"), "first": entry.first,
        "chains": {ch: [c.snap, c.items, c.digest, c.snap_bytes, c.delta_bytes]
                   for ch, c in entry.chains.items()},
    }
    if entry.early:  # rare: left out otherwise, as older entries never had it
        fields["early"] = list(entry.early)
    if entry.run is not None:
        fields["run"] = entry.run
    return fields


def _finite(time: float | None, name: str) -> float | None:
    """A time from the store's clock, checked here: entries are stored without
    the walk that refuses a NaN or an infinity (``_validation.encode_own``)."""
    if time is not None and not math.isfinite(time):
        raise InvalidMessage(f"metadata.{name}", f"{time} is not a finite number; the store's "
                             "clock must return finite times")
    return time


def _lease_label(entry: Lease) -> str:
    if entry.until is None:
        return "released the thread"
    return "took the thread" if entry.token is None else "kept the thread"


def is_entry(message: Message) -> bool:
    """Whether ``message`` is a checkpoint ledger entry."""
    return message.metadata.get("langgraph") == FORMAT


def decode(session: str, message: Message) -> Entry | None:
    """The entry a whole message stores; None for a message that is no entry of ours."""
    meta = message.metadata
    if "langgraph" not in meta:
        return None
    seq = message.seq or 0
    if meta["langgraph"] != FORMAT:  # written by another chatledger: never guessed at
        raise CorruptEntryError(session, seq, f"checkpoint entry format {meta['langgraph']!r},"
                                f" this chatledger reads format {FORMAT}")
    if "kind" in meta and str(meta["kind"]) not in _DECODERS:  # not a field it lacks
        raise CorruptEntryError(session, seq, f"not a checkpoint ledger entry: unknown kind "
                                f"{str(meta['kind'])!r}")
    try:
        data = _Unpacker(message.data)
        entry = _DECODERS[str(meta["kind"])](meta, seq, data)
        data.finish()
        return entry
    except KeyError as exc:  # its repr names Python's exception, its str() is the bare key
        raise CorruptEntryError(session, seq, f"not a checkpoint ledger entry: its record has "
                                f"no field {exc.args[0]!r}") from exc
    # AttributeError: a field meant to be a mapping is not one (its .items())
    except (TypeError, ValueError, AttributeError) as exc:
        raise CorruptEntryError(session, seq, f"not a checkpoint ledger entry: "
                                f"{str(exc) or 'its record is malformed'}") from exc


class _Packer:
    """Collects the serialized values of one entry into its ``data``."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def add(self, value: Typed) -> list[JSON]:
        kind, blob = value
        self._parts.append(blob)
        return [kind, len(blob)]

    def joined(self) -> bytes | None:
        return b"".join(self._parts) if self._parts else None


class _Unpacker:
    """Hands out the values of one entry's ``data``, in the order they were added."""

    def __init__(self, data: bytes | None) -> None:
        self._view = memoryview(data or b"")
        self._offset = 0

    def take(self, size: int) -> bytes:
        end = self._offset + size
        if size < 0 or end > len(self._view):
            raise ValueError(f"a value of {size} bytes at offset {self._offset} overruns "
                             f"the entry's {len(self._view)} bytes of data")
        blob = bytes(self._view[self._offset:end])
        self._offset = end
        return blob

    def finish(self) -> None:
        if self._offset != len(self._view):
            raise ValueError(f"{len(self._view) - self._offset} bytes of data are no value")


def _untyped(raw: Any, data: _Unpacker) -> Typed:
    kind, stored = raw
    if not isinstance(stored, int):
        raise TypeError(f"a value's size is {stored!r}")
    return str(kind), data.take(stored)


def _value(meta: Mapping[str, Any], seq: int, data: _Unpacker) -> ValueEntry:
    return ValueEntry(str(meta["ch"]), _untyped(meta["val"], data), seq)


def _items(meta: Mapping[str, Any], seq: int, data: _Unpacker) -> ItemsEntry:
    prev = meta["prev"]
    if prev is not None and not 0 < int(prev) < seq:
        raise ValueError(f"items entry {seq} continues entry {prev}, which is not before it")
    items: Sequence[Any] = meta["items"]
    return ItemsEntry(str(meta["ch"]), [_untyped(item, data) for item in items],
                      None if prev is None else int(prev), seq)


def _chain(raw: Sequence[Any]) -> Chain:
    snap, items, digest, snap_bytes, delta_bytes = raw
    return Chain(None if snap is None else int(snap), int(items), str(digest),
                 int(snap_bytes), int(delta_bytes))


def _checkpoint(meta: Mapping[str, Any], seq: int, data: _Unpacker) -> CheckpointEntry:
    parent = meta["parent"]
    return CheckpointEntry(
        checkpoint_id=str(meta["id"]), parent_id=None if parent is None else str(parent),
        checkpoint=_untyped(meta["cp"], data), metadata=_untyped(meta["md"], data),
        fresh=[str(ch) for ch in meta["fresh"]],
        carried={str(ch): None if s is None else int(s) for ch, s in meta["carried"].items()},
        seq=seq, swept=_time(meta.get("swept")), first=bool(meta.get("first", False)),
        chains={str(ch): _chain(raw) for ch, raw in meta.get("chains", {}).items()},
        early=[_before(int(s), seq) for s in meta.get("early", ())],
        run=_token(meta.get("run")),
    )


def _before(pointer: int, seq: int) -> int:
    if not 0 < pointer < seq:
        raise ValueError(f"entry {seq} points at entry {pointer}, which is not before it")
    return pointer


def _writes(meta: Mapping[str, Any], seq: int, data: _Unpacker) -> WritesEntry:
    writes = [Write(int(idx), str(ch), _untyped((kind, stored), data))
              for idx, ch, kind, stored in meta["writes"]]
    return WritesEntry(str(meta["cp"]), str(meta["task"]), str(meta["path"]), writes, seq,
                       _token(meta.get("run")))


def _tombstone(meta: Mapping[str, Any], seq: int, data: _Unpacker) -> Tombstone:
    ids: Sequence[Any] = meta["ids"]
    return Tombstone([str(i) for i in ids], seq)


def _keep_alive(meta: Mapping[str, Any], seq: int, data: _Unpacker) -> KeepAlive:
    return KeepAlive(float(meta["at"]), seq)


def _lease(meta: Mapping[str, Any], seq: int, data: _Unpacker) -> Lease:
    return Lease(str(meta["run"]), _token(meta["token"]), _time(meta["until"]), seq)


def _namespace(meta: Mapping[str, Any], seq: int, data: _Unpacker) -> NamespaceEntry:
    return NamespaceEntry(str(meta["ns"]), _time(meta["swept"]), seq)


def _time(raw: Any) -> float | None:
    return None if raw is None else float(raw)


def _token(raw: Any) -> int | None:
    return None if raw is None else int(raw)


_DECODERS: dict[str, Callable[[Mapping[str, Any], int, _Unpacker], Entry]] = {
    "ValueEntry": _value,
    "ItemsEntry": _items,
    "CheckpointEntry": _checkpoint,
    "WritesEntry": _writes,
    "Tombstone": _tombstone,
    "KeepAlive": _keep_alive,
    "Lease": _lease,
    "NamespaceEntry": _namespace,
}
