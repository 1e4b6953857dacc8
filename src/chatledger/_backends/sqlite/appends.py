"""The common SQLite append in three statements, none of them a lookup.

Most appends are plain growth: a live session, every check of
:func:`~..contract.plan_append` passing, no id of the batch stored yet. For
those, instead of reading the state and looking the ids up before writing
(seven statements for two messages), :func:`grow` writes optimistically and
lets the file refuse:

1. the ids go into ``message_ids``, their seqs taken from the session row in
   the same statement, and only if that row is live and as the batch expects
   (its ledger, its user, its version); an id already stored breaks the
   primary key, and SQLite undoes that one statement (``ABORT``) and nothing
   else of the transaction, or of the group's (``writes.py``);
2. the session row grows by the batch (``RETURNING`` its new version and its
   ledger, for the Ack);
3. the entries go in, at seqs now known.

Inserted nothing, or refused: nothing is written, and the transactional
base's steps decide, in the same transaction, exactly as before (a retry's
Ack, a refusal, a new or expired session). The statements' text depends only
on the batch's length, so SQLite's statement cache keeps each prepared.
"""

from __future__ import annotations

import sqlite3
from functools import lru_cache

from ..._results import Ack
from ..contract import Batch

__all__ = ["MOST", "grow"]

MOST = 16
"""The longest batch :func:`grow` writes: three statements a length, in the connection's
cache of 128; a longer batch takes the steps (a few more statements, on many rows)."""

# ?1 ns, ?2 sid, ?3 now, ?4 ledger, ?5 user, ?6 expect_version, then the ids. Each
# condition is a check of plan_append that passes (None: nothing to check).
_LIVE = ("s.ns = ?1 AND s.sid = ?2 AND (s.expires_at IS NULL OR s.expires_at > ?3)"
         " AND (?4 IS NULL OR s.ledger = ?4) AND (?5 IS NULL OR s.user_id = ?5)"
         " AND (?6 IS NULL OR s.version = ?6)")


def grow(tx: sqlite3.Connection, namespace: str, session: str, batch: Batch, *,
         now: float, expires: float | None) -> Ack | None:
    """Append ``batch`` if it is plain growth (see the module); else write nothing, None."""
    count = len(batch.ids)
    if count > MOST or batch.expect_version == 0:  # 0: only a new session, for the steps
        return None
    ids, grown, entries = _statements(count)
    try:
        added = tx.execute(ids, (namespace, session, now, batch.ledger, batch.user,
                                 batch.expect_version, *batch.ids)).rowcount
    except sqlite3.IntegrityError:
        return None  # an id is stored: a retry, or a refusal; the statement left nothing
    if not added:
        return None
    version, ledger = tx.execute(grown, (namespace, session, now, expires)).fetchone()
    first = version - count + 1
    tx.execute(entries, (namespace, session, first, *batch.blobs))
    return Ack(first, version, version, ledger=ledger)


@lru_cache(maxsize=MOST)
def _statements(count: int) -> tuple[str, str, str]:
    """The three statements of :func:`grow` for a batch of ``count``."""
    values = ", ".join(f"(?{7 + i}, {i + 1})" for i in range(count))
    ids = ("INSERT INTO message_ids (ns, sid, msg_id, seq, batch_first, batch_last)"
           f" SELECT s.ns, s.sid, v.column1, s.version + v.column2, s.version + 1,"
           f" s.version + {count} FROM sessions AS s CROSS JOIN (VALUES {values}) AS v"
           f" WHERE {_LIVE}")
    grown = (f"UPDATE sessions SET version = version + {count}, updated_at = ?3,"
             " expires_at = ?4 WHERE ns = ?1 AND sid = ?2 RETURNING version, ledger")
    rows = ", ".join(f"(?1, ?2, ?3 + {i}, ?{4 + i})" for i in range(count))
    entries = f"INSERT INTO entries (ns, sid, seq, body) VALUES {rows}"
    return ids, grown, entries
