"""The SQLite schema, and bringing an older file up to it."""

from __future__ import annotations

import sqlite3

from .contract import LEGACY_LEDGER

__all__ = ["ensure_schema"]

# The user index: forget_user finds a user's sessions without a scan.
_USER_INDEX = ("CREATE INDEX IF NOT EXISTS sessions_by_user ON sessions (ns, user_id)"
               " WHERE user_id IS NOT NULL")
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS sessions (
    ns TEXT NOT NULL, sid TEXT NOT NULL,
    version INTEGER NOT NULL, first_seq INTEGER NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, expires_at REAL,
    ledger TEXT NOT NULL DEFAULT '{LEGACY_LEDGER}',
    user_id TEXT,
    PRIMARY KEY (ns, sid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_by_expiry ON sessions (expires_at)
    WHERE expires_at IS NOT NULL;
{_USER_INDEX};
CREATE TABLE IF NOT EXISTS entries (
    ns TEXT NOT NULL, sid TEXT NOT NULL, seq INTEGER NOT NULL, body BLOB NOT NULL,
    PRIMARY KEY (ns, sid, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS message_ids (
    ns TEXT NOT NULL, sid TEXT NOT NULL, msg_id TEXT NOT NULL, seq INTEGER NOT NULL,
    batch_first INTEGER NOT NULL, batch_last INTEGER NOT NULL,
    PRIMARY KEY (ns, sid, msg_id)
) WITHOUT ROWID;
"""
_TABLES = {"sessions", "entries", "message_ids"}
# A file written before sessions had ledger ids: each of its sessions gets the
# legacy id, so a session recreated later (with a fresh id) is still told apart.
_ADD_LEDGER = f"ALTER TABLE sessions ADD COLUMN ledger TEXT NOT NULL DEFAULT '{LEGACY_LEDGER}'"
# A file written before sessions could be tagged with a user: all untagged.
_ADD_USER = "ALTER TABLE sessions ADD COLUMN user_id TEXT"
_UPGRADES = (("ledger", (_ADD_LEDGER,)), ("user_id", (_ADD_USER, _USER_INDEX)))


def ensure_schema(db: sqlite3.Connection) -> None:
    """Create the tables, or add what an older file lacks.

    Only a new or older file takes the write lock: opening a store must not
    wait behind (or fail because of) another process's long write.
    """
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
    if not tables >= _TABLES:
        db.executescript(_SCHEMA)
    elif _missing(db):
        db.execute("BEGIN IMMEDIATE")
        try:
            for column, statements in _UPGRADES:
                if column in _missing(db):  # checked again under the lock: one opener adds it
                    for statement in statements:
                        db.execute(statement)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


def _missing(db: sqlite3.Connection) -> set[str]:
    """The columns of ``sessions`` that this file lacks."""
    present = {row[1] for row in db.execute("PRAGMA table_info(sessions)")}
    return {column for column, _ in _UPGRADES} - present
