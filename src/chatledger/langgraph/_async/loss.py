"""Reads that ask what a namespace still holds: the checkpoint the application
knows (``_loss.py``), or a refused run's input.

The source of ``_sync/loss.py``.
"""

from __future__ import annotations

from collections.abc import Callable

from .._chain import Found, Walk
from .._entries import CheckpointEntry
from .._heads import Head
from .._layout import split_session_id
from .._loss import CheckpointLost, KnownCheckpoint
from .ledger import AsyncCheckpointLedger

__all__ = ["find_known", "input_kept", "rolled_back_error"]


async def find_known(ledger: AsyncCheckpointLedger, match: Callable[[Found], bool], walk: Walk,
                     known: str | None, since: int | None = None) -> Found | None:
    """``ledger.find(match, walk, since)``, raising CheckpointLost unless the
    namespace holds ``known`` (None: nothing known, nothing checked).

    One walk serves both: when the known checkpoint is the latest, the first
    checkpoint found settles both, and no read is added.
    """
    if known is None:
        return await ledger.find(match, walk, since)
    check = KnownCheckpoint(known)
    result: Found | None = None
    async for page in ledger.pages(since):
        for found in walk.feed(page):
            check.see(found)
            if result is None and match(found):
                result = found
            if result is not None and check.held:
                return result
        if walk.ended:
            break
    if check.held:
        return result
    thread_id, ns = split_session_id(ledger.session.id) or (ledger.session.id, "")
    raise check.lost(ledger.session.id, ledger.version, ledger.ledger, thread_id, ns)


async def input_kept(ledger: AsyncCheckpointLedger, parent_id: str | None,
                     source: Callable[[CheckpointEntry], object]) -> bool:
    """Whether a refused run's input is in the thread's history, applied.

    The run continued ``parent_id``, its own checkpoint, or its input
    checkpoint's: the nearest input checkpoint at or before it in the latest
    checkpoint's history. Its input is applied when the next checkpoint in that
    history is a step (``source`` ``"loop"``), not another run's input put on
    top, which replaces it. One walk back along the parent chain, made only
    when a run is refused.
    """
    child: CheckpointEntry | None = None
    met = False
    async for found in ledger.chain(None, ledger.walk()):
        entry = found.entry
        met = met or entry.checkpoint_id == parent_id
        if met and source(entry) == "input":
            return child is not None and source(child) == "loop"
        child = entry
    return False


async def rolled_back_error(ledger: AsyncCheckpointLedger, seen: Head,
                            latest: Found | None) -> CheckpointLost:
    """The error for a namespace whose ledger went back below what this saver saw
    (``_loss.rolled_back``); ``latest``: its latest checkpoint, if the read found it."""
    version, found_ledger = ledger.version, ledger.ledger
    if latest is None:
        latest = await ledger.find(lambda f: True, ledger.walk())
    thread_id, ns = split_session_id(ledger.session.id) or (ledger.session.id, "")
    return CheckpointLost(ledger.session.id, version, found_ledger, thread_id=thread_id,
                          checkpoint_ns=ns, expected_checkpoint=seen.entry.checkpoint_id,
                          found_checkpoint=None if latest is None else latest.entry.checkpoint_id,
                          seen_version=seen.version)
