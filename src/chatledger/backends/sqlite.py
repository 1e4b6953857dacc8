"""``sqlite:///path.db``: the embedded default, no server to run.

Layout (one file, shared safely by many processes on one machine)::

    sessions(ns, sid) -> version, first_seq, created_at, updated_at, expires_at
    entries(ns, sid, seq) -> body          the ledger; seq is the primary key's tail
    message_ids(ns, sid, msg_id) -> seq, batch_first, batch_last
                                           the idempotency index, kept until the
                                           session is deleted or expires

The file runs in WAL mode: readers never block the writer. Every write is one
``BEGIN IMMEDIATE`` transaction, which takes the write lock up front so two
writers never deadlock upgrading read locks; a busy writer waits up to the
store's ``timeout`` and then reports ``BackendUnavailable``, which the store
retries. Reads run in one deferred transaction so that the session row and its
entries come from one snapshot. Windows are range scans on the primary key:
O(window), whatever the history length. ``synchronous=FULL`` by default so an
acknowledged append survives a power cut; ``?synchronous=normal`` trades that
for speed.

Options (URL query or keywords): ``synchronous`` (full, normal).
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from .._core import StoredId, check_expected_version, dedupe, prefix_upper_bound
from ..errors import BackendError, BackendUnavailable, ChatLedgerError, ConfigError
from ..options import StoreOptions
from ..results import Ack
from ..url import StoreURL
from .base import (
    EMPTY,
    Backend,
    Batch,
    RawHistory,
    RawInfo,
    ReadQuery,
    SessionPage,
    reject_unknown_options,
)
from .sqlite_connections import ThreadConnections

__all__ = ["SQLiteBackend"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    ns TEXT NOT NULL, sid TEXT NOT NULL,
    version INTEGER NOT NULL, first_seq INTEGER NOT NULL,
    created_at REAL NOT NULL, updated_at REAL NOT NULL, expires_at REAL,
    PRIMARY KEY (ns, sid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sessions_by_expiry ON sessions (expires_at)
    WHERE expires_at IS NOT NULL;
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
_SYNCHRONOUS = ("full", "normal")
_PAGE = 500
_SWEEP_EVERY = 256  # appends between two sweeps of expired sessions
_SWEEP_BATCH = 100
_IN_CHUNK = 500  # stay well under SQLite's bound-parameter limit
# SQLite's messages for "someone else holds the lock" and "the disk said no":
# a retry may succeed, so they are BackendUnavailable, not BackendError.
_TRANSIENT = ("locked", "busy", "disk i/o", "unable to open", "readonly", "disk is full")


class SQLiteBackend(Backend):
    """One connection per thread; the file's own locks order the writers."""

    schemes = ("sqlite",)

    def __init__(self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]) -> None:
        super().__init__(url, options, extra)
        reject_unknown_options(url, extra, ("synchronous",))
        self.path = _database_path(url)
        self._synchronous = str(extra.get("synchronous", "full")).lower()
        if self._synchronous not in _SYNCHRONOUS:
            raise ConfigError(f"synchronous={self._synchronous!r}: use one of {_SYNCHRONOUS}")
        self._connections = ThreadConnections(self._connect, url.redacted())
        self._appends = itertools.count(1)
        with self._errors():  # fail at open on a bad file, not at the first append
            self._ensure_schema(self._connections.get())

    # -- operations ---------------------------------------------------------

    def append(self, session: str, batch: Batch) -> Ack:
        with self._write() as db:
            now = self.options.clock()
            state = self._state(db, session, now)
            version = state[0] if state else 0
            if state:
                ack = dedupe(batch.ids, self._stored_ids(db, session, batch.ids))
                if ack is not None:
                    return ack
            check_expected_version(session, batch.expect_version, version)
            self._insert(db, session, version, batch)
            self._save_state(db, session, version + len(batch.ids), now, created=state is None)
        if next(self._appends) % _SWEEP_EVERY == 0:
            # Housekeeping after the commit: its failure (a busy lock) must not
            # turn an append that is stored into an error or a retried duplicate.
            with suppress(ChatLedgerError):
                self.sweep_expired()
        return Ack(version + 1, version + len(batch.ids), version + len(batch.ids))

    def read(self, session: str, query: ReadQuery) -> RawHistory:
        touch = self.options.touch_on_read and self.options.ttl is not None
        with self._transaction("BEGIN IMMEDIATE" if touch else "BEGIN") as db:
            now = self.options.clock()
            state = self._state(db, session, now, writing=touch)
            if state is None:
                return EMPTY
            version, first_seq = state
            if touch:
                self._touch(db, session, now)
            low, count = query.window(version, first_seq)
            rows = db.execute(
                "SELECT seq, body FROM entries WHERE ns = ? AND sid = ? AND seq >= ?"
                " ORDER BY seq LIMIT ?",
                (self.options.namespace, session, low, -1 if count is None else count),
            ).fetchall()
            return RawHistory([(seq, bytes(body)) for seq, body in rows], version, first_seq)

    def info(self, session: str) -> RawInfo | None:
        with self._snapshot() as db:
            row = db.execute(
                "SELECT version, first_seq, created_at, updated_at, expires_at FROM sessions"
                " WHERE ns = ? AND sid = ?",
                (self.options.namespace, session),
            ).fetchone()
        if row is None or _expired(row[4], self.options.clock()):
            return None
        return RawInfo(*row)

    def trim(self, session: str, keep_last: int) -> int:
        with self._write() as db:
            state = self._state(db, session, self.options.clock())
            if state is None:
                return 0
            version, first_seq = state
            cut = max(first_seq, version - keep_last + 1)
            key = (self.options.namespace, session)
            db.execute("DELETE FROM entries WHERE ns = ? AND sid = ? AND seq < ?", (*key, cut))
            db.execute("UPDATE sessions SET first_seq = ? WHERE ns = ? AND sid = ?", (cut, *key))
            return cut - first_seq

    def delete(self, session: str) -> bool:
        with self._write() as db:
            live = self._state(db, session, self.options.clock()) is not None
            self._drop(db, session)
            return live

    def list_sessions(self, prefix: str, cursor: str | None) -> SessionPage:
        where, args = self._prefix_range(prefix)
        if cursor is not None:
            where, args = f"{where} AND sid > ?", [*args, cursor]
        with self._snapshot() as db:
            rows = db.execute(
                f"SELECT sid FROM sessions WHERE {where}"
                " AND (expires_at IS NULL OR expires_at > ?) ORDER BY sid LIMIT ?",
                (*args, self.options.clock(), _PAGE + 1),
            ).fetchall()
        ids = [sid for (sid,) in rows[:_PAGE]]
        return SessionPage(ids, ids[-1] if len(rows) > _PAGE else None)

    def purge(self, prefix: str) -> int:
        where, args = self._prefix_range(prefix)
        with self._write() as db:
            live = db.execute(
                f"SELECT count(*) FROM sessions WHERE {where}"
                " AND (expires_at IS NULL OR expires_at > ?)",
                (*args, self.options.clock()),
            ).fetchone()[0]
            for table in ("entries", "message_ids", "sessions"):
                db.execute(f"DELETE FROM {table} WHERE {where}", args)
            return int(live)

    def sweep_expired(self) -> int:
        """Delete a bounded batch of expired sessions; they are invisible already."""
        with self._write() as db:
            doomed = db.execute(
                "SELECT sid FROM sessions WHERE expires_at <= ? AND ns = ? LIMIT ?",
                (self.options.clock(), self.options.namespace, _SWEEP_BATCH),
            ).fetchall()
            for (sid,) in doomed:
                self._drop(db, sid)
            return len(doomed)

    def close(self) -> None:
        self._connections.close()

    # -- SQL pieces -----------------------------------------------------------

    def _state(
        self, db: sqlite3.Connection, session: str, now: float, *, writing: bool = True
    ) -> tuple[int, int] | None:
        """(version, first_seq) of a live session.

        Writers remove an expired session first, so that a new session of the
        same id starts from nothing; readers merely do not see it.
        """
        row = db.execute(
            "SELECT version, first_seq, expires_at FROM sessions WHERE ns = ? AND sid = ?",
            (self.options.namespace, session),
        ).fetchone()
        if row is None:
            return None
        if _expired(row[2], now):
            if writing:
                self._drop(db, session)
            return None
        return row[0], row[1]

    def _stored_ids(
        self, db: sqlite3.Connection, session: str, ids: list[str]
    ) -> dict[str, StoredId]:
        found: dict[str, StoredId] = {}
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = db.execute(
                "SELECT msg_id, seq, batch_first, batch_last FROM message_ids"
                f" WHERE ns = ? AND sid = ? AND msg_id IN ({marks})",
                (self.options.namespace, session, *chunk),
            )
            found.update((mid, (seq, first, last)) for mid, seq, first, last in rows)
        return found

    def _insert(self, db: sqlite3.Connection, session: str, version: int, batch: Batch) -> None:
        key = (self.options.namespace, session)
        first, last = version + 1, version + len(batch.ids)
        db.executemany("INSERT INTO entries VALUES (?, ?, ?, ?)",
                       [(*key, seq, blob) for seq, blob in enumerate(batch.blobs, first)])
        db.executemany("INSERT INTO message_ids VALUES (?, ?, ?, ?, ?, ?)",
                       [(*key, mid, seq, first, last) for seq, mid in enumerate(batch.ids, first)])

    def _save_state(
        self, db: sqlite3.Connection, session: str, version: int, now: float, *, created: bool
    ) -> None:
        key = (self.options.namespace, session)
        expires = self.options.expiry(now)
        if created:
            db.execute("INSERT INTO sessions VALUES (?, ?, ?, 1, ?, ?, ?)",
                       (*key, version, now, now, expires))
        else:
            db.execute("UPDATE sessions SET version = ?, updated_at = ?, expires_at = ?"
                       " WHERE ns = ? AND sid = ?", (version, now, expires, *key))

    def _touch(self, db: sqlite3.Connection, session: str, now: float) -> None:
        db.execute("UPDATE sessions SET expires_at = ? WHERE ns = ? AND sid = ?",
                   (self.options.expiry(now), self.options.namespace, session))

    def _drop(self, db: sqlite3.Connection, session: str) -> None:
        for table in ("entries", "message_ids", "sessions"):
            db.execute(f"DELETE FROM {table} WHERE ns = ? AND sid = ?",
                       (self.options.namespace, session))

    def _prefix_range(self, prefix: str) -> tuple[str, list[str]]:
        """A WHERE clause matching ids that start literally with ``prefix``."""
        where, args = "ns = ? AND sid >= ?", [self.options.namespace, prefix]
        upper = prefix_upper_bound(prefix)
        if upper is not None:
            where, args = f"{where} AND sid < ?", [*args, upper]
        return where, args

    # -- connections and transactions ---------------------------------------

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=self.options.timeout, isolation_level=None,
                             check_same_thread=False)
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode != "wal":  # e.g. a file system without shared memory: say so, loudly
            db.close()
            raise ConfigError(f"{self.path}: SQLite refused WAL mode (journal_mode={mode}); "
                              "chatledger needs it for safe concurrent writers")
        db.execute(f"PRAGMA synchronous = {self._synchronous.upper()}")
        return db

    @staticmethod
    def _ensure_schema(db: sqlite3.Connection) -> None:
        # Only a new file takes the write lock: opening a store must not wait
        # behind (or fail because of) another process's long write.
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
        if not {"sessions", "entries", "message_ids"} <= tables:
            db.executescript(_SCHEMA)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._transaction("BEGIN IMMEDIATE") as db:
            yield db

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        with self._transaction("BEGIN") as db:
            yield db

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[sqlite3.Connection]:
        """Commit on success, roll back on any error: never a half-written batch."""
        with self._errors(), self._connections.use() as db:
            db.execute(begin)
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                _roll_back(db)
                raise

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            message = f"sqlite {self.path}: {exc}"
            if any(word in str(exc).lower() for word in _TRANSIENT):
                raise BackendUnavailable(message) from exc
            raise BackendError(message) from exc


def _roll_back(db: sqlite3.Connection) -> None:
    """Undo what is left of a failed transaction, keeping the original error.

    SQLite rolls back by itself on some errors (disk full, I/O error); a second
    ROLLBACK would then fail and hide the error that matters.
    """
    if db.in_transaction:
        with suppress(sqlite3.Error):
            db.execute("ROLLBACK")


def _expired(expires_at: float | None, now: float) -> bool:
    return expires_at is not None and expires_at <= now


def _database_path(url: StoreURL) -> str:
    if url.hosts and url.hosts[0][0]:
        raise ConfigError(
            f"{url.redacted()!r}: a sqlite URL has no host; use sqlite:///relative.db "
            "or sqlite:////absolute/path.db"
        )
    if not url.path or url.path == ":memory:":
        raise ConfigError(
            f"{url.redacted()!r} names no database file; use sqlite:///chatledger.db "
            "(for a throwaway in-process store use memory://)"
        )
    if Path(url.path).is_dir():
        raise ConfigError(f"{url.redacted()!r} names a directory, not a database file")
    Path(url.path).parent.mkdir(parents=True, exist_ok=True)
    return url.path
