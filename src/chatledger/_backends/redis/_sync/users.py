# Generated from src/chatledger/_backends/redis/_async/users.py by scripts/unasync.py: edit that file, not this one.
"""The user index on Redis: a tagged append, a user's sessions, and forgetting one.

The source of ``_sync/users.py``. The index (a SET per user, ``keys.py``) and a
session live in different slots, so no one script writes both: the order of
the calls keeps them consistent instead.

* A tagged session is created only after the index names it: the append
  script refuses to create it until the caller says it added the id
  (:class:`~..calls.NotIndexed`), and the caller adds it again after the
  session is created, in case a ``forget_user`` removed the entry meanwhile.
* ``forget_session`` deletes the session, then removes the index entry, then
  deletes the session again: an append that recreated it between the first
  delete and the removal is deleted too, and one that recreates it after the
  removal re-adds the entry itself. A crash at any point leaves an index entry
  that the next ``forget_user`` finds (at worst naming a session already gone).

The one window left: a writer that adds the entry, then stalls until a whole
``forget_session`` has run, then creates the session and dies before adding the
entry again, leaves a session the index does not name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...._results import Ack
from ...contract import Batch
from ..calls import Calls, NotIndexed, ScriptCall

__all__ = ["forget_session", "indexed_append"]

Run = Callable[[ScriptCall[Any]], Any]


def indexed_append(run: Run, calls: Calls, session: str, batch: Batch) -> Ack:
    """The append; one that creates a tagged session puts it in the user's index first."""
    try:
        ack: Ack = run(calls.append(session, batch))
        return ack
    except NotIndexed:
        assert batch.user is not None
    run(calls.index_add(batch.user, session))
    ack = run(calls.append(session, batch, indexed=True))
    run(calls.index_add(batch.user, session))
    return ack


def forget_session(run: Run, calls: Calls, user: str, session: str) -> bool:
    """Delete the user's session, then its index entry, then the session again."""
    deleted: bool = run(calls.forget(user, session))
    run(calls.index_remove(user, session))
    again: bool = run(calls.forget(user, session))
    return deleted or again
