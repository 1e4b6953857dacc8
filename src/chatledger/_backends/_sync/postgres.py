# Generated from src/chatledger/_backends/_async/postgres.py by scripts/unasync.py: edit that file, not this one.
"""``postgresql://`` (and ``postgres://``): the ten promises on PostgreSQL, through psycopg 3.

The operations and their rules are the transactional base's
(:mod:`.transactional`); this module fills in its steps, one statement each
(:mod:`.._postgres_sql`), and owns the pool (psycopg_pool, ``max_connections``
connections, a caller waits ``timeout`` for one).

Concurrency, proved by construction rather than by isolation level. Every
write transaction runs under ``READ COMMITTED`` and starts, for each session it
writes, with a transaction-level advisory lock on the session's key, taken
before the session row is read, even when there is no row yet (a row lock
cannot cover a missing row, and two first appends would both insert). Writers
of one session therefore run one after the other, and each statement after
the lock sees everything the previous writer committed: the version check,
the idempotency lookup by message id and the ledger check all read the latest
state. Purge and the expiry sweep take the same locks, in id order, before
deleting, and delete only the sessions they locked: a session written
meanwhile is never left half deleted. Reads run in one ``REPEATABLE READ READ
ONLY`` transaction, so the session row and its window come from one snapshot;
windows are range scans on the entries' primary key: O(window).

TTL: ``expires_at`` is filtered on every read; expired sessions are deleted
by writers that meet them and, every few hundred appends, by a sweep of a
bounded batch (:meth:`PostgresBackend.sweep_expired`).

Failures: see :mod:`.._postgres_io`. A commit whose reply is lost is retried
by the store with the same message ids, and the retry finds the batch.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, ClassVar

import psycopg
import psycopg_pool
from psycopg import Connection
from psycopg_pool import ConnectionPool

from ..._checks import Check
from ..._errors import BackendUnavailable, ChatLedgerError, ConfigError
from ..._options import StoreOptions
from ..._url import StoreURL
from .._postgres_checks import PRIVILEGES, findings, permission_check, unreachable
from .._postgres_config import postgres_settings, quote_name
from .._postgres_io import abort_at_deadline, first_line, translated
from .._postgres_sql import SCHEMA_VERSION, statements
from ..contract import (
    PAGE,
    Batch,
    HeadPage,
    RawHistory,
    RawInfo,
    Reseal,
    StoredId,
    prefix_upper_bound,
)
from ..registry import builtin_schemes
from .postgres_schema import migrate, schema_version
from .transactional import TransactionalBackend, page_of_heads

__all__ = ["PostgresBackend"]

_SWEEP_EVERY = 256  # appends between two sweeps of expired sessions
_SWEEP_BATCH = 100
_BEGIN = {True: "BEGIN ISOLATION LEVEL READ COMMITTED",
          False: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"}
_BROKEN = (psycopg.OperationalError, psycopg.InterfaceError)


class _Connection(Connection[Any]):
    """A connection that remembers why connecting failed: the pool only says it timed out."""

    failures: ClassVar[dict[str, str]] = {}  # conninfo -> the last connect error

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs: Any) -> _Connection:
        try:
            connection = super().connect(conninfo, **kwargs)
        except psycopg.OperationalError as exc:
            cls.failures[conninfo] = first_line(exc)
            raise
        cls.failures.pop(conninfo, None)
        return connection


@dataclass(frozen=True)
class _Tx:
    connection: Connection[Any]
    write: bool


class PostgresBackend(TransactionalBackend[_Tx]):
    """A pool of connections; advisory locks order the writers of a session."""

    schemes = builtin_schemes(__name__)
    # A bytea holds 1 GiB, and so does one message on the wire: half of it leaves
    # room for the other entries of a batch, sent together as one array.
    max_entry_bytes = 512 * 1024 * 1024

    def __init__(self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]) -> None:
        super().__init__(url, options, extra)
        self.settings = postgres_settings(url, options, extra)
        self.sql = statements(quote_name(self.settings.schema))
        self._where = url.redacted()
        self._pool: ConnectionPool[Connection[Any]] = ConnectionPool(
            self.settings.conninfo, connection_class=_Connection, min_size=0,
            max_size=self.settings.max_connections, open=False,
            timeout=self.settings.timeout, kwargs={"autocommit": True}, name="chatledger",
            # A failed connect is not retried in the background with a growing
            # backoff: the store retries the call, and the next call connects
            # at once, so a server that is back is used as soon as it is.
            reconnect_timeout=0,
        )
        self._appends = itertools.count(1)
        self.migrated: list[int] = []  # the migrations open() applied
        self.schema_version = 0  # the database's, as open() found or left it

    # -- steps ----------------------------------------------------------------

    def _load(self, tx: _Tx, session: str) -> RawInfo | None:
        ns = self.options.namespace
        if tx.write:
            tx.connection.execute(self.sql.lock, (ns, session))
        cursor = tx.connection.execute(self.sql.load, (ns, session))
        row = cursor.fetchone()
        return None if row is None else RawInfo(*row)

    def _save(self, tx: _Tx, session: str, state: RawInfo, *, created: bool) -> None:
        values = (state.version, state.first_seq, state.created_at, state.updated_at,
                  state.expires_at, state.ledger, state.user, self.options.namespace, session)
        tx.connection.execute(
            self.sql.insert_session if created else self.sql.update_session, values)

    def _stored_ids(self, tx: _Tx, session: str, ids: list[str]) -> dict[str, StoredId]:
        cursor = tx.connection.execute(
            self.sql.stored_ids, (self.options.namespace, session, _utf8(ids)), binary=True)
        return {bytes(mid).decode("utf-8", "surrogatepass"): (seq, first, last)
                for mid, seq, first, last in cursor.fetchall()}

    def _insert(self, tx: _Tx, session: str, first_seq: int, batch: Batch) -> None:
        key = (self.options.namespace, session)
        seqs = list(range(first_seq, first_seq + len(batch.ids)))
        tx.connection.execute(self.sql.insert_entries, (*key, seqs, batch.blobs))
        tx.connection.execute(self.sql.insert_ids,
                                    (*key, seqs[0], seqs[-1], _utf8(batch.ids), seqs))

    def _entries(self, tx: _Tx, session: str, low: int,
                       count: int | None) -> list[tuple[int, bytes]]:
        cursor = tx.connection.execute(  # binary: bytea as is, not hex-encoded
            self.sql.entries, (self.options.namespace, session, low, count), binary=True)
        return [(seq, bytes(body)) for seq, body in cursor.fetchall()]

    def _cut(self, tx: _Tx, session: str, below: int) -> None:
        tx.connection.execute(self.sql.cut, (self.options.namespace, session, below))

    def _drop(self, tx: _Tx, session: str) -> None:
        self._drop_all(tx, [session])

    def _drop_all(self, tx: _Tx, sessions: list[str]) -> None:
        for statement in self.sql.drop():
            tx.connection.execute(statement, (self.options.namespace, sessions))

    def _page(self, tx: _Tx, prefix: str, after: str | None, now: float,
                    count: int) -> list[str]:
        upper = prefix_upper_bound(prefix)
        cursor = tx.connection.execute(
            self.sql.page,
            (self.options.namespace, prefix, upper, upper, after or "", now, count))
        return [sid for (sid,) in cursor.fetchall()]

    def heads(self, prefix: str, cursor: str | None) -> HeadPage:
        # One statement sees one snapshot by itself: no BEGIN and COMMIT to wait for.
        upper = prefix_upper_bound(prefix)
        ns = self.options.namespace
        with self._connection() as connection:
            found = connection.execute(  # binary: bytea as is, not hex-encoded
                self.sql.heads,
                (ns, prefix, upper, upper, cursor or "", self.options.clock(), PAGE + 1, ns),
                binary=True)
            rows = found.fetchall()
        return page_of_heads([
            (sid, RawHistory([] if body is None else [(version, bytes(body))],
                             version, first_seq, ledger))
            for sid, version, first_seq, ledger, body in rows])

    def _purge(self, tx: _Tx, prefix: str, now: float) -> int:
        upper = prefix_upper_bound(prefix)
        cursor = tx.connection.execute(
            self.sql.lock_prefix, (now, self.options.namespace, prefix, upper, upper))
        locked = cursor.fetchall()
        self._drop_all(tx, [sid for sid, _, _ in locked])
        return sum(1 for _, live, _ in locked if live)

    def _users_sessions(self, tx: _Tx, user: str) -> list[str]:
        cursor = tx.connection.execute(self.sql.users_sessions,
                                             (self.options.namespace, user))
        return [sid for (sid,) in cursor.fetchall()]

    def _reseal(self, tx: _Tx, session: str, entries: list[Reseal]) -> int:
        seqs, olds, news = (list(column) for column in zip(*entries, strict=True))
        cursor = tx.connection.execute(
            self.sql.reseal, (seqs, olds, news, self.options.namespace, session))
        return cursor.rowcount

    def _appended(self) -> None:
        if next(self._appends) % _SWEEP_EVERY == 0:
            # Housekeeping after the commit: its failure must not turn an
            # append that is stored into an error or a retried duplicate.
            with suppress(ChatLedgerError):
                self.sweep_expired()

    # -- housekeeping, extras -------------------------------------------------

    def sweep_expired(self) -> int:
        """Delete a bounded batch of expired sessions; they are invisible already.

        Candidates are locked first, then checked again: one renewed by an
        append meanwhile is no longer expired and stays.
        """
        with self._transaction(write=True) as tx:
            now, ns = self.options.clock(), self.options.namespace
            cursor = tx.connection.execute(self.sql.lock_expired, (now, ns, _SWEEP_BATCH))
            candidates = [sid for sid, _ in cursor.fetchall()]
            cursor = tx.connection.execute(self.sql.still_expired, (ns, candidates, now))
            doomed = [sid for (sid,) in cursor.fetchall()]
            self._drop_all(tx, doomed)
            return len(doomed)

    def close(self) -> None:
        self._pool.close()

    def checks(self) -> list[Check]:
        """Server version, durability settings, replication, schema version, a round trip."""
        try:
            with self._transaction(write=False) as tx:
                started = time.perf_counter()
                tx.connection.execute("SELECT 1")
                round_trip = time.perf_counter() - started
                cursor = tx.connection.execute(
                    "SELECT current_setting('server_version'), current_setting('fsync'),"
                    " current_setting('synchronous_commit'), current_setting('full_page_writes'),"
                    " current_setting('synchronous_standby_names'), pg_is_in_recovery(),"
                    " (SELECT count(*) FROM pg_stat_replication)")
                settings = cursor.fetchone()
                permissions = self._permissions(tx.connection)
            version = self._schema_version()
        except ChatLedgerError as exc:
            return [unreachable(self._where, exc)]
        assert settings is not None
        return [*findings(settings, version, round_trip), permissions]

    def _permissions(self, connection: Connection[Any]) -> Check:
        """Whether this role holds every privilege chatledger uses, naming any it lacks."""
        schema = self.settings.schema
        # Named as a GRANT would name it: quoted only when it must be.
        shown = schema if schema.isidentifier() and schema == schema.lower() else self.sql.schema
        cursor = connection.execute(self.sql.schema_usage, (schema,))
        usage = bool((cursor.fetchone() or (False,))[0])
        if not usage:
            return permission_check(shown, False, [])
        tables = [f"{self.sql.schema}.{table}" for table, _ in PRIVILEGES]
        cursor = connection.execute(self.sql.table_privileges,
                                          (tables, [privilege for _, privilege in PRIVILEGES]))
        return permission_check(shown, True, [ok for (ok,) in cursor.fetchall()])

    def corrupt_entry(self, session: str, seq: int, blob: bytes) -> None:
        with self._transaction(write=True) as tx:
            cursor = tx.connection.execute(
                self.sql.corrupt, (blob, self.options.namespace, session, seq))
            updated = cursor.rowcount
        assert updated == 1, "the entry to corrupt was not found"

    # -- schema, connections and transactions ----------------------------------

    def open(self) -> None:
        """Open the pool; migrate the schema (``migrate=true``) or check it is current.

        The check runs on a connection of its own, not one from the pool: a
        server that refuses it fails this attempt at once, where a pool's
        caller would wait ``timeout`` for a connection that cannot come (and
        the pool would log each failed try).
        """
        with translated(self._where):
            self._pool.open(wait=False)
        with self._own_connection() as connection:
            if self.settings.migrate:
                self.migrated = migrate(connection, self.sql)
            self.schema_version = schema_version(connection, self.sql)
        if self.schema_version > SCHEMA_VERSION:
            raise ConfigError(
                f"{self._where}: the chatledger schema {self.settings.schema!r} is at version "
                f"{self.schema_version}, newer than this chatledger's {SCHEMA_VERSION}: "
                "upgrade chatledger")
        if self.schema_version < SCHEMA_VERSION:
            raise ConfigError(
                f"{self._where}: the chatledger schema {self.settings.schema!r} is at version "
                f"{self.schema_version}, this chatledger needs {SCHEMA_VERSION}; run "
                "`chatledger migrate-schema URL`, or open the store with migrate=true")

    def migrate_schema(self) -> list[int]:
        """Apply the migrations the database lacks; return the versions applied."""
        with self._connection() as connection:
            return migrate(connection, self.sql)

    def _schema_version(self) -> int:
        with self._connection() as connection:
            return schema_version(connection, self.sql)

    @contextmanager
    def _own_connection(self) -> Iterator[Connection[Any]]:
        """A connection outside the pool, closed after use, bounded and translated."""
        with translated(self._where):
            connection = _Connection.connect(self.settings.conninfo, autocommit=True)
            try:
                with abort_at_deadline(connection):
                    yield connection
            finally:
                connection.close()

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[_Tx]:
        """Commit on success, roll back on any error: never a half-written batch."""
        with self._connection() as connection:
            connection.execute(_BEGIN[write])
            yield _Tx(connection, write)
            connection.execute("COMMIT")

    @contextmanager
    def _connection(self) -> Iterator[Connection[Any]]:
        """A pooled connection, bounded by the call's deadline, with errors translated.

        A connection that failed, or whose call was cut off, is closed rather
        than rolled back: its server may not answer, and a rollback would wait
        on it.
        """
        with translated(self._where):
            connection = self._getconn()
            try:
                with abort_at_deadline(connection):
                    try:
                        yield connection
                    except BaseException as exc:
                        _abandon(connection, exc)
                        raise
            finally:
                self._pool.putconn(connection)

    def _getconn(self) -> Connection[Any]:
        try:
            return self._pool.getconn()
        except psycopg_pool.PoolTimeout as exc:
            why = _Connection.failures.get(self.settings.conninfo)
            raise BackendUnavailable(
                f"postgresql {self._where}: no connection within {self.settings.timeout:g} s"
                + (f": {why}" if why else " (the pool is busy, or the server slow)")) from exc


def _utf8(ids: list[str]) -> list[bytes]:
    return [message_id.encode("utf-8", "surrogatepass") for message_id in ids]


def _abandon(connection: Connection[Any], exc: BaseException) -> None:
    """Roll back after a refusal (a conflict, a bad batch); close after a failure."""
    if isinstance(exc, Exception) and not isinstance(exc, _BROKEN):
        try:
            connection.rollback()
            return
        except psycopg.Error:
            pass
    connection.close()
