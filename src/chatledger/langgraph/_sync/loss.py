# Generated from src/chatledger/langgraph/_async/loss.py by scripts/unasync.py: edit that file, not this one.
"""A read of a namespace that checks the checkpoint the application knows (``_loss.py``).

The source of ``_sync/loss.py``.
"""

from __future__ import annotations

from collections.abc import Callable

from .._chain import Found, Walk
from .._layout import split_session_id
from .._loss import KnownCheckpoint
from .ledger import CheckpointLedger

__all__ = ["find_known"]


def find_known(ledger: CheckpointLedger, match: Callable[[Found], bool], walk: Walk,
                     known: str | None) -> Found | None:
    """``ledger.find(match, walk)``, raising CheckpointLost unless the namespace
    holds ``known`` (None: nothing known, nothing checked).

    One walk serves both: when the known checkpoint is the latest, the first
    checkpoint found settles both, and no read is added.
    """
    if known is None:
        return ledger.find(match, walk)
    check = KnownCheckpoint(known)
    result: Found | None = None
    for page in ledger.pages():
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
