"""``forget_user``: every session of a user, each deleted atomically, resumable.

The source of ``_sync/erasure.py``. The user index is the backend's
(``AsyncBackend.user_sessions``); each session goes through the backend's
``forget_session``, which removes the index entry only after the session, so
a run cut short (a crash, a deadline) leaves the index naming what is left,
and the next run finishes the job.
"""

from __future__ import annotations

from functools import partial

from .._erasure import ROUNDS, Tally
from .._results import ForgetReport
from .handles import StoreHandle

__all__ = ["forget_user"]


async def forget_user(store: StoreHandle, user: str, *, dry_run: bool) -> ForgetReport:
    """Forget every session the index names for ``user``, in rounds (see ``_erasure``)."""
    backend = store._backend
    tally = Tally(user, dry_run)
    listing = partial(store._call, "user_sessions", user, partial(backend.user_sessions, user))
    pending = await listing()
    if dry_run:
        for session in pending:
            info = await store._call("info", session, partial(backend.info, session))
            tally.forgot(session, info is not None and info.user == user)
        return tally.report([])
    for _ in range(ROUNDS):
        if not pending:
            break
        for session in pending:
            tally.forgot(session, await store._call(
                "forget_session", session, partial(backend.forget_session, user, session)))
        pending = await listing()
    return tally.report(pending)
