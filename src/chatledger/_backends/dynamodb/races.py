"""Lost races between writers of other processes: how long to pause, when to give up; no I/O.

A writer whose meta condition failed lost a race to another process's writer
(one backend's own appends to a session take turns instead). It reads again and
tries again, at most :data:`RACES` times, pausing at random in between so that
the writers spread out instead of all failing together again. The store's retry
(:mod:`chatledger._async.retry`) is around this and never sees a lost race: a
race lost :data:`RACES` times in a row, or until the call's deadline, is
BackendUnavailable.
"""

from __future__ import annotations

import random

from ..._deadline import time_left
from ..._errors import BackendUnavailable

__all__ = ["RACES", "backoff", "kept_changing"]

RACES = 100  # lost meta races before an operation gives up (BackendUnavailable)


def backoff(spent: float, attempt: int, where: str, session: str) -> float:
    """The pause after a lost race: at random, in units of the attempt's own round
    trip (``spent``), more after each loss.

    Never past the call's deadline: an async sleep is cancelled there, but the sync
    twin's ``time.sleep`` is not, and a writer losing race after race would overrun
    it; once the deadline has passed, the append is unavailable.
    """
    pause = random.uniform(0, spent * min(2 ** attempt, 16))
    left = time_left()
    if left is None:
        return pause
    if left <= 0:
        raise BackendUnavailable(
            f"dynamodb {where}: the call's deadline (retry.deadline) passed while "
            f"other writers kept changing session {session!r} first; nothing of this "
            "append was committed: appending the same messages again is safe")
    return min(pause, left)


def kept_changing(where: str, session: str) -> BackendUnavailable:
    """The error of an operation that lost :data:`RACES` races in a row."""
    return BackendUnavailable(f"dynamodb {where}: session {session!r} kept changing")
