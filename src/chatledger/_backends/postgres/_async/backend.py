"""``postgresql://`` (and ``postgres://``): the ten promises on PostgreSQL, through psycopg 3.

The operations and their rules are the transactional base's
(:mod:`.transactional`); this module fills in its steps, one statement each
(:mod:`..sql`), and owns the pool (psycopg_pool, ``max_connections``
connections, a caller waits ``timeout`` for one).

Concurrency, proved by construction rather than by isolation level. Every
write transaction runs under ``READ COMMITTED`` and starts, for each session it
writes, with a transaction-level advisory lock on the session's key, taken
before the session row is read, even when there is no row yet (a row lock
cannot cover a missing row, and two first appends would both insert), then
reads the row ``FOR UPDATE``. The append statement takes the advisory lock
only to create a session: on an existing one, its ``UPDATE``
that checks the planned version takes the row's lock, waits behind any other
writer, and checks again on the committed row. Writers of one session
therefore run one after the other, and each statement after the locks sees
everything the previous writer committed: the version check, the idempotency
lookup by message id and the ledger check all read the latest state. Purge
and the expiry sweep take the same locks, in id order, before deleting, and
delete only the sessions they locked: a session written meanwhile is never
left half deleted. Reads run in one ``REPEATABLE READ READ
ONLY`` transaction, so the session row and its window come from one snapshot;
windows are range scans on the entries' primary key: O(window).

TTL: ``expires_at`` is filtered on every read; expired sessions are deleted
by writers that meet them and, every few hundred appends, by a sweep of a
bounded batch (:meth:`AsyncPostgresBackend.sweep_expired`).

Failures: see :mod:`..io`. A commit whose reply is lost is retried
by the store with the same message ids, and the retry finds the batch.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, asynccontextmanager, suppress
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar

import psycopg
import psycopg_pool
from psycopg import AsyncConnection, AsyncCursor

from ...._bounded import keep_within
from ...._checks import Check
from ...._errors import BackendUnavailable, ChatLedgerError, ConfigError
from ...._options import StoreOptions
from ...._results import Ack
from ...._url import StoreURL
from ..._async.transactional import AsyncTransactionalBackend, page_of_heads
from ...contract import (
    EMPTY,
    PAGE,
    Batch,
    Growth,
    HeadPage,
    RawHistory,
    RawInfo,
    ReadQuery,
    Reseal,
    StoredId,
    next_group,
    plan_append,
    prefix_upper_bound,
)
from ...migrations import Migrations
from ...registry import builtin_schemes
from ...turns import AsyncTurns
from ...vectors import has_pending
from ..arrays import bytea_array
from ..arrays import register as register_arrays
from ..checks import PRIVILEGES, findings, permission_check, unreachable
from ..config import postgres_settings, quote_name
from ..io import aabort_at_deadline, first_line, translated, translation
from ..pooling import AsyncPooling
from ..sql import SCHEMA, statements
from .pool import AsyncPool
from .schema import migrate, schema_version
from .vectors import AsyncVectorSearch, found_vectors, keep_pending

__all__ = ["AsyncPostgresBackend"]

_GUESSES = 3  # one-round-trip appends tried before the step-by-step one
_LOOK_FIRST = 64 * 1024  # bytes of a batch that an append sends only once it has looked
_KNOWN = 10_000  # sessions whose state an append remembers, to plan the next from
_CONTENDED = 8  # appends sent through the function after another writer was met
_SWEEP_EVERY = 256  # appends between two sweeps of expired sessions
_SWEEP_BATCH = 100
_BEGIN = {True: "BEGIN ISOLATION LEVEL READ COMMITTED",
          False: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"}
_READ_COMMITTED = ("read committed", "read uncommitted")  # PostgreSQL runs the second as the first
_BROKEN = (psycopg.OperationalError, psycopg.InterfaceError)
_STORED_ID = "message_ids_pkey"  # the constraint that refuses an id stored already


class _Connection(AsyncConnection[Any]):
    """A connection that remembers why connecting failed: the pool only says it timed out.
    It keeps the cursor its appends run in (:meth:`appender`)."""

    failures: ClassVar[dict[str, str]] = {}  # conninfo -> the last connect error
    _appender: AsyncCursor[Any] | None = None

    def appender(self) -> AsyncCursor[Any]:
        """The cursor of this connection's appends, made once: a new cursor per call
        copies the adapters and finds each result column's loader again."""
        if self._appender is None:
            self._appender = self.cursor()
        return self._appender

    @classmethod
    async def connect(cls, conninfo: str = "", **kwargs: Any) -> _Connection:
        try:
            connection = await super().connect(conninfo, **kwargs)
        except psycopg.OperationalError as exc:
            cls.failures[conninfo] = first_line(exc)
            raise
        cls.failures.pop(conninfo, None)
        register_arrays(connection)
        return connection


@dataclass(frozen=True)
class _Seen:
    """What the append's statement saw: whether it wrote, the session, the ids stored."""

    written: bool
    state: RawInfo | None
    found: dict[str, StoredId]


_WRITTEN = _Seen(True, None, {})


@dataclass(frozen=True)
class _Tx:
    connection: AsyncConnection[Any]
    write: bool


class AsyncPostgresBackend(AsyncVectorSearch, AsyncTransactionalBackend[_Tx]):
    """A pool of connections; advisory locks order the writers of a session; pgvector
    for LedgerStore's search where the database has it (:mod:`.vectors`)."""

    schemes = builtin_schemes(__name__)
    # A bytea holds 1 GiB, and so does one message on the wire: half of it leaves
    # room for the other entries of a batch, sent together as one array.
    max_entry_bytes = 512 * 1024 * 1024
    # The schema's migration chain: what open() checks and migrate applies (one
    # attribute, so that a test can stand a newer chain in for the next release's).
    migrations: Migrations[str] = SCHEMA

    def __init__(self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]) -> None:
        super().__init__(url, options, extra)
        self.settings = postgres_settings(url, options, extra)
        self.sql = statements(quote_name(self.settings.schema))
        self._where = url.redacted()
        self._pools = AsyncPooling(self._new_pool)  # async: one per event loop (..pooling)
        self._appends = itertools.count(1)
        self._known: dict[str, RawInfo] = {}  # the state of sessions this backend wrote last
        self._contended: dict[str, int] = {}  # sessions -> appends left through the function
        # This backend's appends to a session in line, each planned from what the one
        # before it wrote (a guess right the first time), none holding a connection
        # while it waits on the session's lock behind another (see ..turns).
        self._turns = AsyncTurns()
        self._turn_where = f"postgresql {self._where}"  # for the turn's error, made once
        # Whether a statement outside BEGIN runs under READ COMMITTED, as the append's
        # statement needs (open() asks the server for its default isolation).
        self._read_committed = True
        self.migrated: list[int] = []  # the migrations open() applied
        self.schema_version = 0  # the database's, as open() found or left it

    # -- the append: one round trip -------------------------------------------

    async def append(self, session: str, batch: Batch) -> Ack:
        """Plan the append from the state this backend last saw, and send it whole.

        One statement, one round trip, its own transaction
        (:meth:`~..sql.Statements.grow`: it writes only if the session is as
        planned, under the session's lock), and the commit follows. An id already
        stored fails the statement (its primary key), and a look follows on the
        same connection (the schema's function ``append``, ``write`` false).
        A wrong guess (another process wrote, or this one never
        saw the session) writes nothing and returns the session as it is: the
        plan is asked again from that, and either answers (a retry's Ack, a
        refusal) or is sent again. An answer older than the row (the statement
        waited for another writer's commit, its snapshot taken before) is
        followed by a look, not counted as a wrong guess. An expired session,
        and a guess wrong time after time, take the step-by-step append of the
        transactional base, which removes what expired first.

        Why one plain statement: it needs no snapshot taken after a lock (the
        UPDATE re-checks the row it waited for, ON CONFLICT checks the index),
        and it costs the server half a call of a PL/pgSQL function; a pipeline
        of BEGIN, the statements and COMMIT costs the client a pipeline's work.
        On a server whose default isolation is not READ COMMITTED, it is sent
        inside ``BEGIN ISOLATION LEVEL READ COMMITTED`` and ``COMMIT``, in one
        pipeline.
        """
        async with self._turns.of(session, self._turn_where):
            return await self._append(session, batch)

    async def _append(self, session: str, batch: Batch) -> Ack:
        guess = self._known.get(session)
        # A large batch is not sent on a guess: a retry, or a wrong guess, would
        # send its bytes for nothing. It looks first (its ids only), then sends.
        look = sum(map(len, batch.blobs)) > _LOOK_FIRST
        fresh = self._contended.pop(session, 0)
        if fresh > 1:  # this append through the function too, and so many after it
            self._contended[session] = fresh - 1
        guesses = 0
        while guesses < _GUESSES:
            now = self.options.clock()
            expires = self.options.expiry(now)
            plan = None if look else _guessed(session, batch, guess, now, expires)
            look = False
            seen = await self._send(session, batch, plan, now, fresh=fresh > 0)
            if plan is not None and seen.written:
                self._remember(session, plan.state)
                await self._appended()
                return plan.ack
            if seen.state is not None and seen.state.expired(now):
                break
            self._remember(session, seen.state)
            outcome = plan_append(session, batch, seen.state, seen.found, now=now,
                                  expires=expires)
            if isinstance(outcome, Ack):
                return outcome
            # An answer older than the row the statement met (it waited for another
            # writer's commit; the snapshot was taken before) plans the same write again,
            # which cannot succeed: look instead (the function: a snapshot per statement,
            # no lock waited for), one round trip as a resend would be. Not counted: the
            # look is (so at most 2 * _GUESSES statements).
            look = plan is not None and _stale(plan, guess, seen.state)
            if look:  # another writer at work: wait for it as the function does
                fresh = _CONTENDED
                self._contend(session)
            else:
                guesses += 1
            guess = seen.state
        self._known.pop(session, None)
        return await super().append(session, batch)

    async def read(self, session: str, query: ReadQuery) -> RawHistory:
        """One statement, one round trip (a read that renews the TTL writes: the
        base's transaction)."""
        if self.options.touch_on_read and self.options.ttl is not None:
            return await super().read(session, query)
        params = {"ns": self.options.namespace, "sid": session, "now": self.options.clock(),
                  "last": query.last, "after": query.after, "limit": query.limit}
        async with self._connection() as connection:
            cursor = await connection.execute(self.sql.window, params, binary=True)
            rows = await cursor.fetchall()
        if not rows:
            return EMPTY
        version, first_seq, ledger = rows[0][:3]
        entries = [(seq, bytes(body)) for *_, seq, body in rows if seq is not None]
        return RawHistory(entries, version, first_seq, ledger)

    async def _send(self, session: str, batch: Batch, plan: Growth | None,
                    now: float, *, fresh: bool = False) -> _Seen:
        """Send ``plan`` (None: only look) in one statement; what the statement saw
        (``fresh``: through the function, whose answer after a wait is the row's)."""
        params = _append_params(self.options.namespace, session, batch, plan, now)
        async with self._connection() as connection:
            try:
                row = await self._call(connection, session, batch, plan, params, fresh=fresh)
            except psycopg.errors.UniqueViolation as exc:
                # An id of the batch is stored: the statement wrote nothing (it does
                # not look before writing). Look, on the same connection.
                if plan is None or exc.diag.constraint_name != _STORED_ID:
                    raise
                await connection.rollback()  # a pipeline's transaction, if any
                look = _append_params(self.options.namespace, session, batch, None, now)
                row = await self._call(connection, session, batch, None, look)
        if row[0]:  # written as planned: what it saw is not read
            return _WRITTEN
        written, *state, ids, seqs, firsts, lasts = row
        return _Seen(written, None if state[0] is None else RawInfo(*state),
                     dict(zip(map(_text, ids or []), zip(seqs or [], firsts or [],
                                                          lasts or [], strict=True),
                              strict=True)))

    async def _call(self, connection: _Connection, session: str, batch: Batch,
                    plan: Growth | None, params: dict[str, Any], *,
                    fresh: bool = False) -> tuple[Any, ...]:
        """One statement, its row: the planned append (:meth:`.Statements.grow`, or
        with ``fresh`` the function), or with ``plan`` None the function's look
        (``write`` false)."""
        statement = self.sql.call_append if plan is None or fresh else self.sql.grow(
            created=plan.created, count=len(batch.ids))
        pending = self.vectors is not None and plan is not None and has_pending(session)
        if self._read_committed and not pending:  # the call is a transaction of its own
            cursor = connection.appender()
            await cursor.execute(statement, params, binary=True)
        else:  # the call and the item's vectors, or another default isolation
            async with connection.pipeline():
                await connection.execute(_BEGIN[True])
                cursor = await connection.execute(statement, params, binary=True)
                if pending:  # written only if the call wrote the entry
                    assert self.vectors is not None and plan is not None
                    await keep_pending(connection, self.vectors,
                                       (self.options.namespace, session),
                                       plan.state.version, _utf8(batch.ids[-1:])[0])
                await connection.execute("COMMIT")
        row: tuple[Any, ...] | None = await cursor.fetchone()
        assert row is not None  # the statement returns one row, whatever it found
        return row

    def _contend(self, session: str) -> None:
        """Another writer is at work on ``session``: its next ``_CONTENDED`` appends
        are sent through the schema's function, whose statements each take their
        snapshot after the lock they waited for, so that one that finds the session
        moved on answers with the row as it is (the plain statement answers from its
        snapshot, taken before the wait: one more round trip per conflict)."""
        self._contended[session] = _CONTENDED
        keep_within(self._contended, _KNOWN)

    def _remember(self, session: str, state: RawInfo | None) -> None:
        """Keep ``state`` to plan the session's next append from.

        Not over a later state of the same ledger: appends of this backend
        that overlap (LangGraph's put and put_writes, on two threads) finish
        in any order, and the last to finish may have seen an older state.
        """
        known = self._known.pop(session, None)
        if known is not None and state is not None and known.ledger == state.ledger:
            state = known if known.version >= state.version else state  # max(), no key call
        if state is not None:
            self._known[session] = state
            keep_within(self._known, _KNOWN)

    # -- steps ----------------------------------------------------------------

    async def _load(self, tx: _Tx, session: str) -> RawInfo | None:
        ns = self.options.namespace
        if tx.write:  # the session's lock, then its row's (see Statements.lock)
            await tx.connection.execute(self.sql.lock, (ns, session))
        cursor = await tx.connection.execute(
            self.sql.load_for_update if tx.write else self.sql.load, (ns, session))
        row = await cursor.fetchone()
        return None if row is None else RawInfo(*row)

    async def _save(self, tx: _Tx, session: str, state: RawInfo, *, created: bool) -> None:
        values = (state.version, state.first_seq, state.created_at, state.updated_at,
                  state.expires_at, state.ledger, state.user, self.options.namespace, session)
        await tx.connection.execute(
            self.sql.insert_session if created else self.sql.update_session, values)

    async def _stored_ids(self, tx: _Tx, session: str, ids: list[str]) -> dict[str, StoredId]:
        cursor = await tx.connection.execute(
            self.sql.stored_ids, {"ns": self.options.namespace, "sid": session,
                                  "ids": _utf8(ids)}, binary=True)
        return {_text(mid): (seq, first, last) for mid, seq, first, last
                in await cursor.fetchall()}

    async def _insert(self, tx: _Tx, session: str, first_seq: int, batch: Batch) -> None:
        key = (self.options.namespace, session)
        seqs = list(range(first_seq, first_seq + len(batch.ids)))
        await tx.connection.execute(self.sql.insert_entries, (*key, seqs, batch.blobs))
        await tx.connection.execute(self.sql.insert_ids,
                                    (*key, seqs[0], seqs[-1], _utf8(batch.ids), seqs))
        if self.vectors is not None:
            await keep_pending(tx.connection, self.vectors, key, seqs[-1], None)

    async def _entries(self, tx: _Tx, session: str, low: int,
                       count: int | None) -> list[tuple[int, bytes]]:
        cursor = await tx.connection.execute(  # binary: bytea as is, not hex-encoded
            self.sql.entries, (self.options.namespace, session, low, count), binary=True)
        return [(seq, bytes(body)) for seq, body in await cursor.fetchall()]

    async def _cut(self, tx: _Tx, session: str, below: int) -> None:
        await tx.connection.execute(self.sql.cut, (self.options.namespace, session, below))

    async def _drop(self, tx: _Tx, session: str) -> None:
        await self._drop_all(tx, [session])

    async def _drop_all(self, tx: _Tx, sessions: list[str]) -> None:
        for session in sessions:  # the next append plans for no session: one round trip
            self._known.pop(session, None)
        for statement in self.sql.drop():
            await tx.connection.execute(statement, (self.options.namespace, sessions))

    async def _page(self, tx: _Tx, prefix: str, after: str | None, now: float,
                    count: int) -> list[str]:
        upper = prefix_upper_bound(prefix)
        cursor = await tx.connection.execute(
            self.sql.page,
            (self.options.namespace, prefix, upper, upper, after or "", now, count))
        return [sid for (sid,) in await cursor.fetchall()]

    async def _namespaces(self, tx: _Tx, now: float) -> list[str]:
        cursor = await tx.connection.execute(self.sql.namespaces, (now,))
        return [ns for (ns,) in await cursor.fetchall()]

    async def heads(self, prefix: str, cursor: str | None) -> HeadPage:
        # One statement sees one snapshot by itself: no BEGIN and COMMIT to wait for.
        upper = prefix_upper_bound(prefix)
        ns = self.options.namespace
        async with self._connection() as connection:
            found = await connection.execute(  # binary: bytea as is, not hex-encoded
                self.sql.heads,
                (ns, prefix, upper, upper, cursor or "", self.options.clock(), PAGE + 1, ns),
                binary=True)
            rows = await found.fetchall()
        return page_of_heads([
            (sid, RawHistory([] if body is None else [(version, bytes(body))],
                             version, first_seq, ledger))
            for sid, version, first_seq, ledger, body in rows])

    async def group_heads(self, prefix: str, separator: str, cursor: str | None) -> HeadPage:
        low = prefix if cursor is None else next_group(cursor, prefix, separator)
        upper = prefix_upper_bound(prefix)
        async with self._connection() as connection:  # one statement: one snapshot
            found = await connection.execute(self.sql.group_heads(bounded=upper is not None), {
                "ns": self.options.namespace, "low": low, "upper": upper,
                "now": self.options.clock(), "count": PAGE + 1, "start": len(prefix) + 1,
                "sep": separator, "next": chr(ord(separator) + 1)}, binary=True)
            rows = await found.fetchall()
        return page_of_heads([
            (sid, RawHistory([] if body is None else [(version, bytes(body))],
                             version, first_seq, ledger))
            for sid, version, first_seq, ledger, body in rows])

    async def _purge(self, tx: _Tx, prefix: str, now: float) -> int:
        upper = prefix_upper_bound(prefix)
        ns = self.options.namespace
        cursor = await tx.connection.execute(self.sql.lock_prefix, (ns, prefix, upper, upper))
        sessions = [sid for sid, _ in await cursor.fetchall()]
        cursor = await tx.connection.execute(self.sql.lock_rows, (now, ns, sessions))
        locked = await cursor.fetchall()
        await self._drop_all(tx, [sid for sid, _ in locked])
        return sum(1 for _, live in locked if live)

    async def _users_sessions(self, tx: _Tx, user: str) -> list[str]:
        cursor = await tx.connection.execute(self.sql.users_sessions,
                                             (self.options.namespace, user))
        return [sid for (sid,) in await cursor.fetchall()]

    async def _reseal(self, tx: _Tx, session: str, entries: list[Reseal]) -> int:
        seqs, olds, news = (list(column) for column in zip(*entries, strict=True))
        cursor = await tx.connection.execute(
            self.sql.reseal, (seqs, olds, news, self.options.namespace, session))
        return cursor.rowcount

    async def _appended(self) -> None:
        if next(self._appends) % _SWEEP_EVERY == 0:
            # Housekeeping after the commit: its failure must not turn an
            # append that is stored into an error or a retried duplicate.
            with suppress(ChatLedgerError):
                await self.sweep_expired()

    # -- housekeeping, extras -------------------------------------------------

    async def sweep_expired(self) -> int:
        """Delete a bounded batch of expired sessions; they are invisible already.

        Candidates are locked first, then checked again: one renewed by an
        append meanwhile is no longer expired and stays.
        """
        async with self._transaction(write=True) as tx:
            now, ns = self.options.clock(), self.options.namespace
            cursor = await tx.connection.execute(self.sql.lock_expired, (now, ns, _SWEEP_BATCH))
            candidates = [sid for sid, _ in await cursor.fetchall()]
            cursor = await tx.connection.execute(self.sql.still_expired, (ns, candidates, now))
            doomed = [sid for (sid,) in await cursor.fetchall()]
            await self._drop_all(tx, doomed)
            return len(doomed)

    async def close(self) -> None:
        await self._pools.close()

    async def checks(self) -> list[Check]:
        """Server version, durability settings, replication, schema version, a round trip."""
        try:
            async with self._transaction(write=False) as tx:
                started = time.perf_counter()
                await tx.connection.execute("SELECT 1")
                round_trip = time.perf_counter() - started
                cursor = await tx.connection.execute(
                    "SELECT current_setting('server_version'), current_setting('fsync'),"
                    " current_setting('synchronous_commit'), current_setting('full_page_writes'),"
                    " current_setting('synchronous_standby_names'), pg_is_in_recovery(),"
                    " (SELECT count(*) FROM pg_stat_replication)")
                settings = await cursor.fetchone()
                permissions = await self._permissions(tx.connection)
            version = await self._schema_version()
        except ChatLedgerError as exc:
            return [unreachable(self._where, exc)]
        assert settings is not None
        return [*findings(settings, version, self.migrations.current, round_trip),
                permissions]

    async def _permissions(self, connection: AsyncConnection[Any]) -> Check:
        """Whether this role holds every privilege chatledger uses, naming any it lacks."""
        schema = self.settings.schema
        # Named as a GRANT would name it: quoted only when it must be.
        shown = schema if schema.isidentifier() and schema == schema.lower() else self.sql.schema
        cursor = await connection.execute(self.sql.schema_usage, (schema,))
        usage = bool((await cursor.fetchone() or (False,))[0])
        if not usage:
            return permission_check(shown, False, [])
        tables = [f"{self.sql.schema}.{table}" for table, _ in PRIVILEGES]
        cursor = await connection.execute(self.sql.table_privileges,
                                          (tables, [privilege for _, privilege in PRIVILEGES]))
        granted = [ok for (ok,) in await cursor.fetchall()]
        cursor = await connection.execute(self.sql.append_execute, (self.sql.append_signature,))
        execute = bool((await cursor.fetchone() or (True,))[0])
        return permission_check(shown, True, granted, execute)

    async def corrupt_entry(self, session: str, seq: int, blob: bytes) -> None:
        async with self._transaction(write=True) as tx:
            cursor = await tx.connection.execute(
                self.sql.corrupt, (blob, self.options.namespace, session, seq))
            updated = cursor.rowcount
        assert updated == 1, "the entry to corrupt was not found"

    # -- schema, connections and transactions ----------------------------------

    async def open(self) -> None:
        """Open the pool; migrate the schema (``migrate=true``) or check it is current.

        The check runs on a connection of its own, not one from the pool: a
        server that refuses it fails this attempt at once, where a pool's
        caller would wait ``timeout`` for a connection that cannot come (and
        the pool would log each failed try).
        """
        with translated(self._where):
            await self._pools.open()
        async with self._own_connection() as connection:
            if self.settings.migrate:
                self.migrated = await migrate(connection, self.sql, self._schema_place,
                                              self.migrations)
            self.schema_version = await schema_version(connection, self.sql)
            cursor = await connection.execute("SHOW default_transaction_isolation")
            self._read_committed = (await cursor.fetchone() or ("",))[0] in _READ_COMMITTED
            if self.schema_version:
                self.vectors = await found_vectors(connection, self.sql.schema,
                                                   create=self.settings.migrate)
        self.migrations.check_not_newer(self.schema_version, self._schema_place)
        if self.schema_version < self.migrations.current:
            raise ConfigError(
                f"{self._where}: the chatledger schema {self.settings.schema!r} is at version "
                f"{self.schema_version}, this chatledger needs {self.migrations.current}; run "
                "`chatledger migrate-schema URL`, or open the store with migrate=true")

    async def migrate_schema(self) -> list[int]:
        """Apply the migrations the database lacks; return the versions applied."""
        async with self._connection() as connection:
            applied = await migrate(connection, self.sql, self._schema_place, self.migrations)
            self.vectors = await found_vectors(connection, self.sql.schema, create=True)
            return applied

    @property
    def _schema_place(self) -> str:
        return f"{self._where}, schema {self.settings.schema!r}"

    async def _schema_version(self) -> int:
        async with self._connection() as connection:
            return await schema_version(connection, self.sql)

    @asynccontextmanager
    async def _own_connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A connection outside the pool, closed after use, bounded and translated."""
        with translated(self._where):
            connection = await _Connection.connect(self.settings.conninfo, autocommit=True)
            try:
                with aabort_at_deadline(connection):
                    yield connection
            finally:
                await connection.close()

    @asynccontextmanager
    async def _transaction(self, *, write: bool) -> AsyncIterator[_Tx]:
        """Commit on success, roll back on any error: never a half-written batch."""
        async with self._connection() as connection:
            await connection.execute(_BEGIN[write])
            yield _Tx(connection, write)
            await connection.execute("COMMIT")

    def _connection(self) -> _Lent:
        """A pooled connection, bounded by the call's deadline, with errors translated
        (``async with``).

        A connection that failed, or whose call was cut off, is closed rather
        than rolled back: its server may not answer, and a rollback would wait
        on it.
        """
        return _Lent(self)

    def _new_pool(self) -> AsyncPool:
        return AsyncPool(
            self.settings.conninfo, connection_class=_Connection, min_size=0,
            max_size=self.settings.max_connections, open=False,
            timeout=self.settings.timeout, kwargs={"autocommit": True}, name="chatledger",
            # A failed connect is not retried in the background with a growing
            # backoff: the store retries the call, and the next call connects
            # at once, so a server that is back is used as soon as it is.
            reconnect_timeout=0,
        )

    @property
    def _pool(self) -> AsyncPool:
        """The pool the next call takes a connection from."""
        return self._pools.pool

    async def _getconn(self, pool: AsyncPool) -> _Connection:
        try:
            connection: _Connection = await pool.getconn()
            return connection
        except psycopg_pool.PoolTimeout as exc:
            why = _Connection.failures.get(self.settings.conninfo)
            raise BackendUnavailable(
                f"postgresql {self._where}: no connection within {self.settings.timeout:g} s"
                + (f": {why}" if why else " (the pool is busy, or the server slow)")) from exc


class _Lent:
    """:meth:`AsyncPostgresBackend._connection`'s context: a class, not a generator
    context manager (every call of the backend enters one)."""

    __slots__ = ("_backend", "_connection", "_guard", "_pool")
    _connection: _Connection
    _guard: AbstractContextManager[None]
    _pool: AsyncPool

    def __init__(self, backend: AsyncPostgresBackend) -> None:
        self._backend = backend

    async def __aenter__(self) -> _Connection:
        try:  # translated(), inline
            self._pool = pool = await self._backend._pools.here()
            self._connection = connection = await self._backend._getconn(pool)
        except psycopg.Error as exc:
            raise translation(exc, self._backend._where) from exc
        self._guard = aabort_at_deadline(connection)
        self._guard.__enter__()  # its __exit__ is always reached: __aexit__ runs next
        return connection

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        connection = self._connection
        try:
            try:
                if exc is not None:  # within the deadline's guard, as the call was
                    await _abandon(connection, exc)
            finally:
                try:
                    self._guard.__exit__(None, None, None)
                finally:
                    await self._pool.putconn(connection)
        except psycopg.Error as error:
            raise translation(error, self._backend._where) from error
        if isinstance(exc, psycopg.Error):
            raise translation(exc, self._backend._where) from exc


def _utf8(ids: list[str]) -> list[bytes]:
    return [message_id.encode("utf-8", "surrogatepass") for message_id in ids]


def _text(message_id: bytes) -> str:
    return bytes(message_id).decode("utf-8", "surrogatepass")


def _guessed(session: str, batch: Batch, guess: RawInfo | None, now: float,
             expires: float | None) -> Growth | None:
    """The plan if the session is as guessed and holds none of the ids; None when the
    guess would refuse the batch (the server's state decides that, not a guess)."""
    try:
        plan = plan_append(session, batch, guess, {}, now=now, expires=expires)
    except ChatLedgerError:
        return None
    assert isinstance(plan, Growth)  # without stored ids, the plan never finds a retry
    return plan


def _stale(plan: Growth, guess: RawInfo | None, seen: RawInfo | None) -> bool:
    """Whether a plain statement that wrote nothing answered from a snapshot older than
    the row it met: the session as ``plan`` was made from (an UPDATE whose WHERE held on
    it re-checked a newer row), or none where a new session's row was in the way (ON
    CONFLICT met a row committed since)."""
    return seen is None if plan.created else seen == guess


def _append_params(ns: str, session: str, batch: Batch, plan: Growth | None,
                   now: float) -> dict[str, Any]:
    """The append statement's parameters: the planned write, or (None) a look."""
    grown = plan.state if plan is not None else RawInfo(0, 1, now, now, None, "")
    first = plan.first_seq if plan is not None else 1
    # The two arrays in binary form (.arrays): psycopg's list dumper costs more.
    return {"ns": ns, "sid": session, "ids": bytea_array(_utf8(batch.ids)),
            "write": plan is not None,
            "was": None if plan is None or plan.created else first - 1,
            "ledger": grown.ledger, "user": grown.user, "now": now,
            "blobs": bytea_array(batch.blobs if plan is not None else []),
            "first": first, "last": grown.version, "first_seq": grown.first_seq,
            "created": grown.created_at, "expires": grown.expires_at}


async def _abandon(connection: AsyncConnection[Any], exc: BaseException) -> None:
    """Roll back after a refusal (a conflict, a bad batch); close after a failure."""
    if isinstance(exc, Exception) and not isinstance(exc, _BROKEN):
        try:
            await connection.rollback()
            return
        except psycopg.Error:
            pass
    await connection.close()
