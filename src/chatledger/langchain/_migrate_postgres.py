"""Import what langchain-postgres's ``PostgresChatMessageHistory`` wrote.

It keeps every session in one table, ``(id SERIAL, session_id UUID, message
JSONB, created_at)``, a row per message (``message_to_dict``), oldest first by
``id``. Each session becomes the chatledger session of the same id (the UUID's
text), oldest message first, in atomic batches of ``batch_size``. The table is
read once, in ``(session_id, id)`` order, through a server-side cursor: memory
holds one session at a time.

Running it again imports nothing new: every message gets a stable ledger id
(its own LangChain id, or one derived from the table, the session and the
row's ``id``), and messages already in the session are skipped. A row that
cannot be decoded, or not stored exactly, is reported with its session and row
id and left behind; the rest of its session is imported.
"""

from __future__ import annotations

import itertools

import psycopg
from psycopg import sql

from .._sync.store import Store
from ._migrate import MigrationReport, Progress, import_session

__all__ = ["migrate_from_langchain_postgres"]

def migrate_from_langchain_postgres(
    url: str,
    table: str,
    store: Store,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
    batch_size: int = 1000,
) -> MigrationReport:
    """Import every session of ``table`` (``name`` or ``schema.name``) at ``url``."""
    report = MigrationReport(dry_run, unit="session")
    name = sql.Identifier(*table.split(".", 1))
    with psycopg.connect(url) as connection:
        count = connection.execute(
            sql.SQL("SELECT count(DISTINCT session_id) FROM {}").format(name)).fetchone()
        report.keys_found = int(count[0]) if count else 0
        with connection.cursor(name="chatledger_migration") as rows:
            rows.execute(sql.SQL("SELECT session_id::text, id, message::text FROM {}"
                                 " ORDER BY session_id, id").format(name))
            sessions = itertools.groupby(rows, key=lambda row: row[0])
            for done, (session_id, group) in enumerate(sessions, 1):
                import_session(store, report, table, session_id, rows=list(group),
                               batch_size=batch_size)
                if progress is not None:
                    progress(done, report.keys_found)
    return report
