"""``sqlite:///path.db``: the embedded default, no server to run.

Layout (one file, shared safely by many processes on one machine)::

    sessions(ns, sid) -> version, first_seq, created_at, updated_at, expires_at, ledger,
                         user_id            the user the session is tagged with;
                                            sessions_by_user (ns, user_id) is the
                                            user index
    entries(ns, sid, seq) -> body          the ledger; seq is the primary key's tail
    message_ids(ns, sid, msg_id) -> seq, batch_first, batch_last
                                           the idempotency index, kept until the
                                           session is deleted or expires

The operations and their rules are the transactional base's
(:mod:`chatledger._backends._sync.transactional`); this module fills in its
steps, one statement or two each, and owns the file and its connections; the
common append (plain growth) takes four statements of its own (``appends.py``).

The file runs in WAL mode: readers never block the writer. Every write is one
``BEGIN IMMEDIATE`` transaction, which takes the write lock up front so two
writers never deadlock upgrading read locks; the store's own writers take
turns on one connection and share commits (``writes.py``), so that
only another process's writer can find the file locked. A busy writer waits up to the
store's ``timeout`` and then reports ``BackendUnavailable``, which the store
retries. Reads run in one deferred transaction so that the session row and its
entries come from one snapshot. Windows are range scans on the primary key:
O(window), whatever the history length. ``synchronous=FULL`` by default so an
acknowledged append survives a power cut; ``?synchronous=normal`` trades that
for speed.

Options (URL query or keywords): ``synchronous`` (full, normal); ``create``
(true by default: make the file, and its folder, when missing; false: a missing
file, or one without a chatledger store in it, is a ``ConfigError`` at open, so
that a volume not mounted or a mistyped path is loud instead of a new, empty
store).
"""

from __future__ import annotations

import itertools
import os
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, closing, contextmanager, suppress
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.request import pathname2url

from ..._checks import Check
from ..._errors import BackendError, BackendUnavailable, ChatLedgerError, ConfigError
from ..._options import StoreOptions, bool_option
from ..._results import Ack
from ..._url import StoreURL
from .._sync.transactional import TransactionalBackend
from ..contract import (
    EMPTY,
    Batch,
    Head,
    RawHistory,
    RawInfo,
    ReadQuery,
    Reseal,
    StoredId,
    prefix_upper_bound,
)
from ..registry import builtin_schemes, reject_unknown_options
from .appends import grow
from .connections import ConnectionPool
from .schema import check_store, ensure_schema

__all__ = ["SQLiteBackend"]

_SYNCHRONOUS = ("full", "normal")
_SWEEP_EVERY = 256  # appends between two sweeps of expired sessions
_SWEEP_BATCH = 100
_IN_CHUNK = 500  # stay well under SQLite's bound-parameter limit
_STATE = "version, first_seq, created_at, updated_at, expires_at, ledger, user_id"
# A read's window (contract.ReadQuery.window) in SQL: ?1 last, ?2 after, ?3 limit; the
# seqs are dense, so the window's end is its start plus its length.
_LOW = "max(s.first_seq, CASE WHEN ?1 IS NULL THEN ?2 + 1 ELSE s.version - ?1 + 1 END)"
# An entry's bytes as a blob whatever its SQLite type: a body stored as TEXT (what
# SQLite's || gives) or a number comes back as its bytes, for the codec to refuse
# as a CorruptEntryError naming its seq, not as a str that bytes() rejects.
_BODY = "CAST(e.body AS BLOB)"
_READ = (
    f"SELECT s.version, s.first_seq, s.ledger, e.seq, {_BODY} FROM sessions AS s"
    " LEFT JOIN entries AS e ON e.ns = s.ns AND e.sid = s.sid"
    f" AND e.seq >= {_LOW} AND e.seq <= s.version"
    f" AND (coalesce(?1, ?3) IS NULL OR e.seq < {_LOW} + coalesce(?1, ?3))"
    " WHERE s.ns = ?4 AND s.sid = ?5 AND (s.expires_at IS NULL OR s.expires_at > ?6)"
    " ORDER BY e.seq")
# SQLite's messages for "someone else holds the lock" and "the disk said no":
# a retry may succeed, so they are BackendUnavailable, not BackendError.
_TRANSIENT = ("locked", "busy", "disk i/o", "unable to open", "readonly", "disk is full")


class SQLiteBackend(TransactionalBackend[sqlite3.Connection]):
    """Connections from a small pool; the file's own locks order the writers."""

    schemes = builtin_schemes(__name__)
    # SQLITE_MAX_LENGTH (10**9 unless SQLite was built otherwise) bounds a whole
    # row, so the entry's bytes leave room for its row's keys (ns, sid, seq).
    max_entry_bytes = 10**9 - 64 * 1024

    def __init__(self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]) -> None:
        super().__init__(url, options, extra)
        reject_unknown_options(url, extra, ("synchronous", "create"))
        self.path = _database_path(url)
        self._synchronous = str(extra.get("synchronous", "full")).lower()
        if self._synchronous not in _SYNCHRONOUS:
            raise ConfigError(f"synchronous={self._synchronous!r}: use one of {_SYNCHRONOUS}")
        self._create = bool_option(extra, "create", True)
        # Without create, SQLite opens the file read-write or fails: never a new file,
        # even one that vanished after open() looked.
        self._database = self.path if self._create else _existing(self.path, "rw")
        self._connections = ConnectionPool(self._connect, url.redacted(), options.timeout)
        self._appends = itertools.count(1)

    # -- operations done in one statement ---------------------------------------

    def read(self, session: str, query: ReadQuery) -> RawHistory:
        """One statement, which sees one snapshot by itself: the session row joined
        with its window (a read that touches the expiry writes: the base's way)."""
        if self.options.touch_on_read and self.options.ttl is not None:
            return super().read(session, query)
        with self._errors(), self._connections.read() as db:
            rows = db.execute(_READ, (query.last, query.after, query.limit,
                                      self.options.namespace, session,
                                      self.options.clock())).fetchall()
        if not rows:
            return EMPTY
        version, first_seq, ledger = rows[0][:3]
        self._check_state(session, version, first_seq)
        entries = [(seq, bytes(body)) for *_, seq, body in rows if seq is not None]
        return RawHistory(entries, version, first_seq, ledger)

    # -- steps ----------------------------------------------------------------

    def _load(self, tx: sqlite3.Connection, session: str) -> RawInfo | None:
        state = self._row(tx, session)
        if state is not None:
            self._check_state(session, state.version, state.first_seq)
        return state

    def _row(self, tx: sqlite3.Connection, session: str) -> RawInfo | None:
        """The session's row as stored, unchecked (``_load`` checks it)."""
        row = tx.execute(f"SELECT {_STATE} FROM sessions WHERE ns = ? AND sid = ?",
                         (self.options.namespace, session)).fetchone()
        return None if row is None else RawInfo(*row)

    def _removable(self, tx: sqlite3.Connection, session: str) -> RawInfo | None:
        """Unchecked: a row damaged by hand can still be deleted or forgotten."""
        return self._row(tx, session)

    def _save(self, tx: sqlite3.Connection, session: str, state: RawInfo, *,
              created: bool) -> None:
        values = (state.version, state.first_seq, state.created_at, state.updated_at,
                  state.expires_at, state.ledger, state.user, self.options.namespace, session)
        if created:
            tx.execute(f"INSERT INTO sessions ({_STATE}, ns, sid)"
                       " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", values)
        else:
            tx.execute("UPDATE sessions SET version = ?, first_seq = ?, created_at = ?,"
                       " updated_at = ?, expires_at = ?, ledger = ?, user_id = ?"
                       " WHERE ns = ? AND sid = ?", values)

    def _grow(self, tx: sqlite3.Connection, session: str, batch: Batch, *, now: float,
              expires: float | None) -> Ack | None:
        return grow(tx, self.options.namespace, session, batch, now=now, expires=expires)

    def _stored_ids(self, tx: sqlite3.Connection, session: str,
                    ids: list[str]) -> dict[str, StoredId]:
        found: dict[str, StoredId] = {}
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = tx.execute(
                "SELECT msg_id, seq, batch_first, batch_last FROM message_ids"
                f" WHERE ns = ? AND sid = ? AND msg_id IN ({marks})",
                (self.options.namespace, session, *chunk),
            )
            found.update((mid, (seq, first, last)) for mid, seq, first, last in rows)
        return found

    def _insert(self, tx: sqlite3.Connection, session: str, first_seq: int,
                batch: Batch) -> None:
        key = (self.options.namespace, session)
        last = first_seq + len(batch.ids) - 1
        tx.executemany("INSERT INTO entries VALUES (?, ?, ?, ?)",
                       [(*key, seq, blob) for seq, blob in enumerate(batch.blobs, first_seq)])
        tx.executemany("INSERT INTO message_ids VALUES (?, ?, ?, ?, ?, ?)",
                       [(*key, mid, seq, first_seq, last)
                        for seq, mid in enumerate(batch.ids, first_seq)])

    def _entries(self, tx: sqlite3.Connection, session: str, low: int,
                 count: int | None) -> list[tuple[int, bytes]]:
        rows = tx.execute(
            f"SELECT seq, {_BODY} FROM entries AS e WHERE ns = ? AND sid = ? AND seq >= ?"
            " ORDER BY seq LIMIT ?",
            (self.options.namespace, session, low, -1 if count is None else count),
        ).fetchall()
        return [(seq, bytes(body)) for seq, body in rows]

    def _cut(self, tx: sqlite3.Connection, session: str, below: int) -> None:
        tx.execute("DELETE FROM entries WHERE ns = ? AND sid = ? AND seq < ?",
                   (self.options.namespace, session, below))

    def _drop(self, tx: sqlite3.Connection, session: str) -> None:
        for table in ("entries", "message_ids", "sessions"):
            tx.execute(f"DELETE FROM {table} WHERE ns = ? AND sid = ?",
                       (self.options.namespace, session))

    def _page(self, tx: sqlite3.Connection, prefix: str, after: str | None, now: float,
              count: int) -> list[str]:
        where, args = self._prefix_range(prefix)
        if after is not None:
            where, args = f"{where} AND sid > ?", [*args, after]
        rows = tx.execute(f"SELECT sid FROM sessions WHERE {where}"
                          " AND (expires_at IS NULL OR expires_at > ?) ORDER BY sid LIMIT ?",
                          (*args, now, count)).fetchall()
        return [sid for (sid,) in rows]

    def _namespaces(self, tx: sqlite3.Connection, now: float) -> list[str]:
        rows = tx.execute("SELECT DISTINCT ns FROM sessions"
                          " WHERE expires_at IS NULL OR expires_at > ? ORDER BY ns", (now,))
        return [ns for (ns,) in rows.fetchall()]

    def _heads(self, tx: sqlite3.Connection, prefix: str, after: str | None, now: float,
               count: int) -> list[Head]:
        where, args = self._prefix_range(prefix)
        if after is not None:
            where, args = f"{where} AND sid > ?", [*args, after]
        rows = tx.execute(
            f"SELECT s.sid, s.version, s.first_seq, s.ledger, {_BODY} FROM"
            " (SELECT sid, version, first_seq, ledger FROM sessions"
            f" WHERE {where} AND (expires_at IS NULL OR expires_at > ?)"
            " ORDER BY sid LIMIT ?) AS s"
            " LEFT JOIN entries AS e ON e.ns = ? AND e.sid = s.sid AND e.seq = s.version"
            " ORDER BY s.sid", (*args, now, count, self.options.namespace)).fetchall()
        return self._heads_of(rows)

    def _group_heads(self, tx: sqlite3.Connection, prefix: str, separator: str, low: str, *,
                     now: float, count: int) -> list[Head]:
        # A skip scan: each step seeks the primary key to where the next group starts.
        upper = prefix_upper_bound(prefix)
        rows = tx.execute(_group_heads_sql(bounded=upper is not None), {
            "ns": self.options.namespace, "low": low, "upper": upper, "now": now,
            "count": count, "start": len(prefix) + 1, "sep": separator,
            "next": chr(ord(separator) + 1)}).fetchall()
        return self._heads_of(rows)

    def _heads_of(self, rows: list[Any]) -> list[Head]:
        """Heads from rows of (sid, version, first_seq, ledger, newest entry's body)."""
        heads: list[Head] = []
        for sid, version, first_seq, ledger, body in rows:
            self._check_state(sid, version, first_seq)
            heads.append((sid, RawHistory([] if body is None else [(version, bytes(body))],
                                          version, first_seq, ledger)))
        return heads

    def _check_state(self, session: str, version: object, first_seq: object) -> None:
        """A session row as the schema means it. SQLite keeps any value in any column,
        so a row edited by hand may hold text where a version is: said here, in one
        line, where arithmetic on it would fail with a bare TypeError later."""
        if type(version) is int and type(first_seq) is int and 1 <= first_seq <= version + 1:
            return
        raise BackendError(f"{self.path}: session {session!r}: its stored state is damaged "
                           f"(version {version!r}, first seq {first_seq!r}): not what chatledger "
                           "wrote; restore the file from a backup, or remove the session "
                           "(session.delete(), or `chatledger delete` its id)")

    def _purge(self, tx: sqlite3.Connection, prefix: str, now: float) -> int:
        where, args = self._prefix_range(prefix)
        live = tx.execute(f"SELECT count(*) FROM sessions WHERE {where}"
                          " AND (expires_at IS NULL OR expires_at > ?)", (*args, now)).fetchone()[0]
        for table in ("entries", "message_ids", "sessions"):
            tx.execute(f"DELETE FROM {table} WHERE {where}", args)
        return int(live)

    def _users_sessions(self, tx: sqlite3.Connection, user: str) -> list[str]:
        rows = tx.execute("SELECT sid FROM sessions WHERE ns = ? AND user_id = ? ORDER BY sid",
                          (self.options.namespace, user)).fetchall()
        return [sid for (sid,) in rows]

    def _reseal(self, tx: sqlite3.Connection, session: str, entries: list[Reseal]) -> int:
        key = (self.options.namespace, session)
        cursor = tx.executemany(
            "UPDATE entries SET body = ? WHERE ns = ? AND sid = ? AND seq = ? AND body = ?",
            [(new, *key, seq, old) for seq, old, new in entries])
        return cursor.rowcount

    def _appended(self) -> None:
        if next(self._appends) % _SWEEP_EVERY == 0:
            # Housekeeping after the commit: its failure (a busy lock) must not
            # turn an append that is stored into an error or a retried duplicate.
            with suppress(ChatLedgerError):
                self.sweep_expired()

    def _prefix_range(self, prefix: str) -> tuple[str, list[str]]:
        """A WHERE clause matching ids that start literally with ``prefix``."""
        where, args = "ns = ? AND sid >= ?", [self.options.namespace, prefix]
        upper = prefix_upper_bound(prefix)
        if upper is not None:
            where, args = f"{where} AND sid < ?", [*args, upper]
        return where, args

    # -- housekeeping, extras -------------------------------------------------

    def sweep_expired(self) -> int:
        """Delete a bounded batch of expired sessions; they are invisible already."""
        with self._transaction(write=True) as tx:
            doomed = tx.execute(
                "SELECT sid FROM sessions WHERE expires_at <= ? AND ns = ? LIMIT ?",
                (self.options.clock(), self.options.namespace, _SWEEP_BATCH),
            ).fetchall()
            for (sid,) in doomed:
                self._drop(tx, sid)
            return len(doomed)

    def close(self) -> None:
        self._connections.close()

    def checks(self) -> list[Check]:
        """Journal mode, integrity and size of the database file."""
        try:
            with self._transaction(write=False) as tx:
                mode = tx.execute("PRAGMA journal_mode").fetchone()[0]
                integrity = tx.execute("PRAGMA quick_check").fetchone()[0]
        except ChatLedgerError as exc:
            return [Check("file", "fail", f"{self.path}: {exc}")]
        size = os.path.getsize(self.path)
        return [
            Check("journal", "ok" if mode == "wal" else "warn", f"journal_mode={mode}", mode),
            Check("integrity", "ok" if integrity == "ok" else "fail",
                  f"quick_check: {integrity}", integrity),
            Check("file", "info", f"{os.path.abspath(self.path)}, {size:,} bytes; "
                  "durable across restarts, local to this machine", size),
        ]

    def corrupt_entry(self, session: str, seq: int, blob: bytes) -> None:
        with self._transaction(write=True) as tx:
            updated = tx.execute("UPDATE entries SET body = ? WHERE ns = ? AND sid = ? AND seq = ?",
                                 (blob, self.options.namespace, session, seq)).rowcount
        assert updated == 1, "the entry to corrupt was not found"

    # -- connections and transactions -------------------------------------------

    def open(self) -> None:
        """Fail at open on a bad file, not at the first append; set up a new one.

        A new file is locked while its first opener sets it up: the store
        retries this as any call (async callers run it in a worker thread).
        """
        _check_file(self.url, create=self._create)
        with self._errors():
            if not self._create:  # looked at read-only first: a refused file is left as it is
                with closing(sqlite3.connect(_existing(self.path, "ro"), uri=True)) as db:
                    check_store(db, self.path)
            ensure_schema(self._connections.get(), self.path, create=self._create)

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self._database, timeout=self.options.timeout, isolation_level=None,
                             check_same_thread=False, uri=not self._create)
        try:
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except sqlite3.Error:
            db.close()  # SQLite skips its busy wait here: the caller retries
            raise
        if mode != "wal":  # e.g. a file system without shared memory: say so, loudly
            db.close()
            raise ConfigError(f"{self.path}: SQLite refused WAL mode (journal_mode={mode}); "
                              "chatledger needs it for safe concurrent writers")
        db.execute(f"PRAGMA synchronous = {self._synchronous.upper()}")
        return db

    def _transaction(self, *, write: bool) -> AbstractContextManager[sqlite3.Connection]:
        """Commit on success, roll back on any error: never a half-written batch.
        A write commits with the store's other writes of the moment (``writes.py``)."""
        return _Writing(self.path, self._connections) if write else self._reading()

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self._errors(), self._connections.use() as db:
            db.execute("BEGIN")
            try:
                yield db
                db.execute("COMMIT")
            except BaseException:
                _roll_back(db)
                raise

    def _errors(self) -> _Errors:
        return _Errors(self.path)


class _Errors:
    """SQLite's errors in our terms: BackendUnavailable for what a retry may fix (a class,
    not a generator: every call enters one)."""

    __slots__ = ("_path",)

    def __init__(self, path: str) -> None:
        self._path = path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, sqlite3.Error):
            raise _ours(self._path, exc) from exc


class _Writing:
    """A write transaction: the store's turn on its write connection (``writes.py``),
    SQLite's errors in our terms as ``_Errors`` says (a class, not a generator: every
    write takes one)."""

    __slots__ = ("_connections", "_path", "_turn")
    _turn: AbstractContextManager[sqlite3.Connection]

    def __init__(self, path: str, connections: ConnectionPool) -> None:
        self._path = path
        self._connections = connections

    def __enter__(self) -> sqlite3.Connection:
        try:
            self._turn = self._connections.use(write=True)
            return self._turn.__enter__()
        except sqlite3.Error as exc:
            raise _ours(self._path, exc) from exc

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self._turn.__exit__(kind, exc, tb)  # commits, or undoes the writer's statements
        except sqlite3.Error as failed:
            raise _ours(self._path, failed) from failed
        if isinstance(exc, sqlite3.Error):  # the block's own; any other goes on by itself
            raise _ours(self._path, exc) from exc


def _ours(path: str, exc: sqlite3.Error) -> BackendError:
    """An SQLite error in our terms: BackendUnavailable for what a retry may fix."""
    message = f"sqlite {path}: {exc}"
    if any(word in str(exc).lower() for word in _TRANSIENT):
        return BackendUnavailable(message)
    return BackendError(message)


def _group_heads_sql(*, bounded: bool) -> str:
    """``group_heads`` in one statement: a recursive query whose each step is one seek
    of the primary key, from where the group of the step before ends
    (:func:`~.contract.next_group`: ``:start`` is where the text after the prefix
    starts, ``:next`` the character after ``:sep``)."""
    first = ("(SELECT sid FROM sessions WHERE ns = :ns AND sid >= {low}"
             + (" AND sid < :upper" if bounded else "")
             + " AND (expires_at IS NULL OR expires_at > :now) ORDER BY sid LIMIT 1)")
    at = "instr(substr(f.sid, :start), :sep)"
    after = (f"CASE WHEN {at} > 0 THEN substr(f.sid, 1, :start + {at} - 2) || :next"
             " ELSE f.sid || char(1) END")
    return ("WITH RECURSIVE firsts(sid, n) AS ("
            f" SELECT {first.format(low=':low')}, 1"
            f" UNION ALL SELECT {first.format(low=after)}, f.n + 1 FROM firsts AS f"
            " WHERE f.sid IS NOT NULL AND f.n < :count)"
            f" SELECT s.sid, s.version, s.first_seq, s.ledger, {_BODY} FROM firsts AS f"
            " CROSS JOIN sessions AS s ON s.ns = :ns AND s.sid = f.sid"  # f first: a seek each
            " LEFT JOIN entries AS e ON e.ns = :ns AND e.sid = s.sid AND e.seq = s.version"
            " ORDER BY s.sid")


def _roll_back(db: sqlite3.Connection) -> None:
    """Undo what is left of a failed transaction, keeping the original error.

    SQLite rolls back by itself on some errors (disk full, I/O error); a second
    ROLLBACK would then fail and hide the error that matters.
    """
    if db.in_transaction:
        with suppress(sqlite3.Error):
            db.execute("ROLLBACK")


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
    return url.path


def _check_file(url: StoreURL, *, create: bool) -> None:
    """What the URL names on disk: file I/O, so at open(), not in the constructor."""
    path = Path(url.path)
    if path.is_dir():
        raise ConfigError(f"{url.redacted()!r} names a directory, not a database file")
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    elif not path.exists():
        raise ConfigError(
            f"{url.redacted()!r}: no database file at {str(path.absolute())!r}, and create=false "
            "(a volume not mounted, or another path?); open it once without create=false "
            "to make a new store there")


def _existing(path: str, mode: str) -> str:
    """The URI that opens ``path`` in ``mode`` (``rw``, ``ro``) if it exists, and fails
    if it does not: SQLite never makes the file through it."""
    return f"file:{pathname2url(str(Path(path).absolute()))}?mode={mode}"
