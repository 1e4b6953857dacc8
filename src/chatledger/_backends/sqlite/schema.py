"""The SQLite schema, its version (the file's ``user_version``) and its migrations."""

from __future__ import annotations

import sqlite3

from ..._errors import ConfigError
from ..contract import NoStoreHere
from ..migrations import Migrations

__all__ = ["SCHEMA", "check_store", "ensure_schema"]

_INITIAL = (
    """CREATE TABLE sessions (
        ns TEXT NOT NULL, sid TEXT NOT NULL,
        version INTEGER NOT NULL, first_seq INTEGER NOT NULL,
        created_at REAL NOT NULL, updated_at REAL NOT NULL, expires_at REAL,
        ledger TEXT NOT NULL,
        user_id TEXT,
        PRIMARY KEY (ns, sid)
    ) WITHOUT ROWID""",
    "CREATE INDEX sessions_by_expiry ON sessions (expires_at) WHERE expires_at IS NOT NULL",
    # The user index: forget_user finds a user's sessions without a scan.
    "CREATE INDEX sessions_by_user ON sessions (ns, user_id) WHERE user_id IS NOT NULL",
    """CREATE TABLE entries (
        ns TEXT NOT NULL, sid TEXT NOT NULL, seq INTEGER NOT NULL, body BLOB NOT NULL,
        PRIMARY KEY (ns, sid, seq)
    ) WITHOUT ROWID""",
    """CREATE TABLE message_ids (
        ns TEXT NOT NULL, sid TEXT NOT NULL, msg_id TEXT NOT NULL, seq INTEGER NOT NULL,
        batch_first INTEGER NOT NULL, batch_last INTEGER NOT NULL,
        PRIMARY KEY (ns, sid, msg_id)
    ) WITHOUT ROWID""",
)

# Another program's tables may share the file; one named as ours may not. The
# version and our tables are read in one statement, so from one snapshot: read
# apart, another process creating the schema between the two reads would show
# our tables without their version.
_STATE = ("SELECT user_version, (SELECT count(*) FROM sqlite_master WHERE type = 'table'"
          " AND name IN ('sessions', 'entries', 'message_ids')) FROM pragma_user_version")

SCHEMA: Migrations[tuple[str, ...]] = Migrations([_INITIAL])
"""The file's schema steps, oldest first; each a tuple of statements."""


def ensure_schema(db: sqlite3.Connection, where: str,
                  schema: Migrations[tuple[str, ...]] = SCHEMA, *, create: bool = True) -> None:
    """Bring the file to ``schema``'s current version, or refuse one newer than it,
    or one with a table named as ours but no version (another program's file), or,
    unless ``create``, one that holds no store yet.

    Only a new or older file takes the write lock: opening a store must not
    wait behind (or fail because of) another process's long write.
    """
    found = check_store(db, where, create=create)
    if not schema.pending(found, where):
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        for version, statements in schema.pending(_version(db), where):  # again, under the lock
            for statement in statements:
                db.execute(statement)
            db.execute(f"PRAGMA user_version = {int(version)}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def check_store(db: sqlite3.Connection, where: str, *, create: bool = False) -> int:
    """The file's schema version; refuse a file with a table named as ours but no
    version (another program's file), or, unless ``create``, one with no store yet."""
    found, ours = db.execute(_STATE).fetchone()
    if found == 0 and ours:
        raise ConfigError(f"{where}: this file has a table named as chatledger's but no "
                          "chatledger schema version (user_version 0): not a store this "
                          "chatledger made; open another file")
    if found == 0 and not create:
        raise NoStoreHere(f"{where}: this file holds no chatledger store, and create=false; "
                          "open it once without create=false to make one there")
    return int(found)


def _version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])
