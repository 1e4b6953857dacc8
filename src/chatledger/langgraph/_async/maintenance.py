"""Copying a namespace's ledger to another thread, and pruning it to its latest checkpoint.

The source of ``_sync/maintenance.py``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ... import _batches
from ..._async.store import AsyncSession
from ..._errors import ConflictError, CorruptEntryError
from ..._messages import JSON, Message
from .._chain import checkpoint_batch
from .._entries import Lease, encode, is_entry
from .._layout import split_session_id, writes_message_id
from .._lists import Items
from .._parts import split
from .._runs import holding
from .lease import AsyncThreadLease
from .ledger import MAX_PAGE, AsyncCheckpointLedger

__all__ = ["copy_session", "restate_latest"]

RESTATE_ATTEMPTS = 4


async def copy_session(source: AsyncSession, target: AsyncSession) -> None:
    """Append every entry of ``source`` to ``target``, which must not exist yet.

    Seqs move by a fixed offset (the source may start past 1 after a prune),
    so the value pointers of checkpoints, and of list deltas, move with them.
    A page read (at most MAX_PAGE entries) is appended in batches of at most
    ``_batches.APPEND_DATA_BYTES``, as ``chatledger import`` appends, each with
    ``expect_version``: a target written meanwhile raises ConflictError.
    """
    if await target.info() is not None:
        thread, ns = split_session_id(target.id) or (target.id, "")
        raise ValueError(f"copy_thread: the target thread {thread!r} already has checkpoints "
                         f"in namespace {ns!r}")
    after, version, offset = 0, 0, None
    while True:
        page = await source.read(after=after, limit=MAX_PAGE)
        if not page.messages:
            return
        if offset is None:
            offset = 1 - (page.messages[0].seq or 1)
        messages = [_shifted_in(source.id, m, offset) for m in page.messages]
        for batch in _batches.by_bytes(messages, _batches.APPEND_DATA_BYTES):
            version = (await target.append(batch, expect_version=version)).version
        after = page.messages[-1].seq or 0


def _shifted_in(session: str, message: Message, offset: int) -> Message:
    """:func:`_shifted`, a damaged entry raised as CorruptEntryError naming where it is."""
    try:
        return _shifted(message, offset)
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptEntryError(session, message.seq or 0,
                                f"a checkpoint ledger entry that cannot be copied: {exc!r}"
                                ) from exc


def _shifted(message: Message, offset: int) -> Message:
    """``message`` with the seqs its entry points at moved by ``offset``: the
    pointer fields are the same in every format, and the data is left alone."""
    meta = dict(message.metadata)
    kind = meta.get("kind") if is_entry(message) else None
    if kind == "ItemsEntry" and meta.get("prev") is not None:
        meta["prev"] = _moved(meta["prev"], offset)
    elif kind == "CheckpointEntry":
        meta["carried"] = {ch: None if s is None else _moved(s, offset)
                           for ch, s in _mapping(meta["carried"]).items()}
        meta["chains"] = {ch: [None if c[0] is None else _moved(c[0], offset), *c[1:]]
                          for ch, c in _mapping(meta.get("chains", {})).items()}
        if "early" in meta:
            meta["early"] = [_moved(s, offset) for s in _list(meta["early"])]
    elif kind == "Lease" and meta.get("token") is not None:
        meta["token"] = _moved(meta["token"], offset)
    if kind in ("CheckpointEntry", "WritesEntry") and meta.get("run") is not None:
        meta["run"] = _moved(meta["run"], offset)  # a lease's token: a seq (runs.py)
    return replace(message, metadata=meta, seq=None)


def _moved(seq: JSON, offset: int) -> int:
    if not isinstance(seq, int):
        raise ValueError(f"it points at {seq!r}")
    return seq + offset


def _mapping(raw: JSON) -> dict[str, Any]:
    return raw if isinstance(raw, dict) else {}


def _list(raw: JSON) -> list[JSON]:
    return raw if isinstance(raw, list) else []


async def restate_latest(ledger: AsyncCheckpointLedger) -> None:
    """Restate the latest checkpoint whole (its values and writes), and the lease a
    run holds on the thread, and trim the rest."""
    split_id = split_session_id(ledger.session.id)
    root = split_id is not None and not split_id[1]  # the one session a lease lives in
    for _ in range(RESTATE_ATTEMPTS):
        held = await _held_lease(ledger) if root else None
        read = ledger.version
        walk = ledger.walk()
        latest = await ledger.find(lambda f: True, walk)
        if root and ledger.version != read:
            continue  # stored between the two reads: the lease read may be stale
        if latest is None:
            if held is None:  # a run that took the thread has yet to store its first
                await ledger.session.delete()
            return
        values = {ch: Items(v) if isinstance(v, list) else v
                  for ch, v in (await ledger.values(latest.entry, walk)).items()}
        entry = latest.entry
        prefix = f"p{ledger.version}/"
        empty = {ch: None for ch, s in entry.value_seqs().items() if s is None}
        batch = checkpoint_batch(
            entry.checkpoint_id, None, parent_id=entry.parent_id, checkpoint=entry.checkpoint,
            metadata=entry.metadata, channels=(), new_values={**empty, **values}, prefix=prefix,
            swept=walk.swept, run=entry.run)  # its run's token: it fences the runs before
        writes = await ledger.writes(latest)  # restated after it, early ones too
        batch += [encode(replace(w, seq=0), writes_message_id(w.checkpoint_id, str(i), prefix))
                  for i, w in enumerate(writes)]
        batch = split(batch, ledger.session.store.options.max_message_bytes)
        if held is not None:  # its entry is trimmed: restated as a renewal, its token kept
            batch.append(encode(Lease(held.run, held.holder, held.until), f"{prefix}lease"))
        try:
            ack = await ledger.append(batch, expect_version=ledger.version, ledger=ledger.ledger)
        except ConflictError:
            continue
        # Up to the restatement, not "all but its length": a run's put that lands
        # before the trim continues the restated checkpoint, its values there.
        await ledger.session._trim_through(ack.first_seq - 1)
        return
    raise ConflictError(ledger.session.id, ledger.version, ledger.version)


async def _held_lease(ledger: AsyncCheckpointLedger) -> Lease | None:
    """The lease a run holds on the thread now (``ledger``: its root namespace's),
    None when it is free.

    Reads back to the newest lease entry: the whole session of a thread no run
    ever held, which the trim is about to cut anyway.
    """
    lease = AsyncThreadLease(ledger, run="prune")
    return holding(await lease.latest(), lease.clock())
