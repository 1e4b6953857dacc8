"""The common SQLite append in four statements, and no lookup of its ids.

Most appends are plain growth: a live session, every check of
:func:`~..contract.plan_append` passing, no id of the batch stored yet. For
those, :func:`grow` does not look the ids up before writing (the steps'
seven statements for two messages); it writes optimistically and lets the
file refuse:

1. the session's version and ledger, read only if the session is live and as
   the batch expects (its ledger, its user, its version);
2. the ids, into ``message_ids``: an id already stored breaks the primary key,
   and SQLite undoes that one statement (``ABORT``), nothing else of the
   transaction or of the group's (``writes.py``);
3. the entries;
4. the session row, grown.

No row in 1, or a refusal in 2: nothing is written, and the transactional
base's steps decide, in the same transaction, exactly as before (a retry's
Ack, a refusal, a new or expired session). Each statement is one of a few
texts (by the batch's length and which checks it asks for), so the
connection's statement cache keeps it prepared; a check the batch does not ask
for is left out of the text rather than bound as NULL, which ``sqlite3``
adapts at some cost, as it does every None.
"""

from __future__ import annotations

import sqlite3
from functools import lru_cache

from ..._results import Ack
from ..contract import Batch

__all__ = ["MOST", "grow"]

MOST = 16
"""The longest batch :func:`grow` writes (longer ones take the steps): the texts of
a few lengths fit the connection's cache of 128 statements beside the others."""


def grow(tx: sqlite3.Connection, namespace: str, session: str, batch: Batch, *,
         now: float, expires: float | None) -> Ack | None:
    """Append ``batch`` if it is plain growth (see the module); else write nothing, None."""
    count = len(batch.ids)
    if count > MOST or batch.expect_version == 0:  # 0: a new session, which the steps make
        return None
    checks = [c for c in (batch.ledger, batch.user, batch.expect_version) if c is not None]
    state, ids, entries, grown = _statements(
        count, batch.ledger is not None, batch.user is not None,
        batch.expect_version is not None, expires is not None)
    row = tx.execute(state, (namespace, session, now, *checks)).fetchone()
    if row is None:
        return None  # none, expired, or a check that fails: the steps say which
    version, ledger = row
    if type(version) is not int:  # a row edited by hand: the steps' load says so
        return None
    first, last = version + 1, version + count
    try:
        tx.execute(ids, (namespace, session, first, last, *batch.ids))
    except sqlite3.IntegrityError:
        return None  # an id is stored: a retry, or a refusal; the statement left nothing
    tx.execute(entries, (namespace, session, first, *batch.blobs))
    tx.execute(grown, (namespace, session, last, now) if expires is None
               else (namespace, session, last, now, expires))
    return Ack(first, last, last, ledger=ledger)


@lru_cache(maxsize=64)
def _statements(count: int, ledger: bool, user: bool, expect: bool,
                expires: bool) -> tuple[str, str, str, str]:
    """The four statements of :func:`grow`: for a batch of ``count``, the checks it
    asks for, and whether the session expires."""
    asked = [column for column, wanted in
             (("ledger", ledger), ("user_id", user), ("version", expect)) if wanted]
    # ?1 ns, ?2 sid, ?3 now, then the checks' values.
    state = ("SELECT version, ledger FROM sessions WHERE ns = ?1 AND sid = ?2"
             " AND (expires_at IS NULL OR expires_at > ?3)"
             + "".join(f" AND {column} = ?{4 + i}" for i, column in enumerate(asked)))
    # ?1 ns, ?2 sid, ?3 the batch's first seq, ?4 its last, then the ids or the blobs.
    ids = "INSERT INTO message_ids VALUES " + ", ".join(
        f"(?1, ?2, ?{5 + i}, ?3 + {i}, ?3, ?4)" for i in range(count))
    entries = "INSERT INTO entries VALUES " + ", ".join(
        f"(?1, ?2, ?3 + {i}, ?{4 + i})" for i in range(count))
    # ?1 ns, ?2 sid, ?3 version, ?4 now, ?5 the expiry.
    grown = ("UPDATE sessions SET version = ?3, updated_at = ?4, expires_at = "
             f"{'?5' if expires else 'NULL'} WHERE ns = ?1 AND sid = ?2")
    return state, ids, entries, grown
