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
import json
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import sql

from .._errors import InvalidMessage
from .._messages import Message
from .._sync.store import Store
from ._ids import migrated_id
from ._migrate import MigrationReport, Progress, Undecodable, _decode, _reason, _stored_ids

__all__ = ["migrate_from_langchain_postgres"]

_Row = tuple[str, int, Any]


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
                _import_session(store, report, table, session_id, rows=list(group),
                                batch_size=batch_size)
                if progress is not None:
                    progress(done, report.keys_found)
    return report


def _import_session(store: Store, report: MigrationReport, table: str, session_id: str, *,
                    rows: list[_Row], batch_size: int) -> None:
    session = store.session(session_id)
    messages = list(_decoded(store, report, table, session_id, rows))
    present = _stored_ids(session)
    new = [message for message in messages if message.id not in present]
    report.messages_present += len(messages) - len(new)
    if new:
        report.sessions_imported += 1
        report.messages_imported += len(new)
    if not report.dry_run:
        for start in range(0, len(new), batch_size):
            session.append(new[start:start + batch_size])


def _decoded(store: Store, report: MigrationReport, table: str, session_id: str,
             rows: list[_Row]) -> Iterator[Message]:
    ids: set[str] = set()
    where = f"{table} session {session_id}"
    for _, row_id, text in rows:
        ledger_id = migrated_id(f"{table}/{session_id}".encode(), str(row_id).encode(), 1)
        try:
            message = _decode(text.encode(), ledger_id, store.options.max_message_bytes)
        except (ValueError, KeyError, TypeError, RecursionError, InvalidMessage,
                json.JSONDecodeError) as exc:
            report.undecodable.append(Undecodable(where, row_id, _reason(exc)))
            continue
        if message.id in ids:  # the same LangChain message stored twice
            report.duplicates += 1
            continue
        ids.add(message.id)
        yield message
