# Generated from src/chatledger/_backends/postgres/_async/vectors.py by scripts/unasync.py: edit that file, not this one.
"""pgvector for LedgerStore on ``postgresql://``: found at open, written with the append,
searched by distance (the table and statements: :mod:`..vectors`).

Found when the backend opens (:func:`found_vectors`): the ``vector`` extension
is used when it is created in the database. A store opened with
``migrate=true`` (the default) creates it if the server has it installed and
the role may create it (PostgreSQL's rule: pgvector is not a trusted
extension, so a superuser, or the database owner once a superuser marked it
trusted); otherwise a database administrator runs ``CREATE EXTENSION vector``
once. The ``item_vectors`` table is created under the migration lock, with the
extension, by a role that may (the schema's owner). Without the extension, the
table, or this role's right to read and write it, LedgerStore scores items in
Python, exactly as on every other backend.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import psycopg
from psycopg import Connection

from ...._options import StoreOptions
from ...contract import RawHistory, prefix_upper_bound
from ...vectors import PENDING, VectorRows
from ..config import quote_name
from ..sql import MIGRATION_LOCK
from ..vectors import VectorStatements

__all__ = ["VectorSearch", "found_vectors", "keep_pending"]

_EXTENSION = ("SELECT n.nspname FROM pg_extension AS x JOIN pg_namespace AS n"
              " ON n.oid = x.extnamespace WHERE x.extname = 'vector'")
_AVAILABLE = "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
# The table exists and this role may read and write it (a role granted chatledger's
# tables before pgvector came would fail every put): else the Python path. Each
# privilege on its own: has_table_privilege's 'A, B' asks for either.
_USABLE = ("SELECT CASE WHEN to_regclass(%s) IS NULL THEN false ELSE"
           " has_table_privilege(to_regclass(%s), 'SELECT')"
           " AND has_table_privilege(to_regclass(%s), 'INSERT')"
           " AND has_table_privilege(to_regclass(%s), 'DELETE') END")


def found_vectors(connection: Connection[Any], schema: str, *,
                        create: bool) -> VectorStatements | None:
    """The statements on ``item_vectors`` when pgvector is usable in the database
    (``schema``: chatledger's, quoted); None: LedgerStore scores in Python.
    ``create``: create the extension (if allowed) and the table when missing."""
    where = _extension_schema(connection)
    if where is None and create and _fetch(connection, _AVAILABLE) is not None:
        try:
            connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        except psycopg.errors.InsufficientPrivilege:
            return None  # an administrator creates it: see the module
        where = _extension_schema(connection)
    if where is None:
        return None
    statements = VectorStatements(schema, quote_name(where))
    if create:
        _create_table(connection, statements)
    table = f"{schema}.item_vectors"
    usable = _fetch(connection, _USABLE, (table,) * 4)
    return statements if usable == (True,) else None


def _create_table(connection: Connection[Any], statements: VectorStatements) -> None:
    """Create ``item_vectors`` under the migration lock; a role that may not (not the
    schema's owner) leaves it to the one that may."""
    connection.execute("BEGIN")
    try:
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        connection.execute(statements.create)
    except psycopg.errors.InsufficientPrivilege:
        connection.execute("ROLLBACK")
        return
    connection.execute("COMMIT")


def _extension_schema(connection: Connection[Any]) -> str | None:
    row = _fetch(connection, _EXTENSION)
    return None if row is None else str(row[0])


def _fetch(connection: Connection[Any], query: str,
                 params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
    cursor = connection.execute(query, params)
    return cursor.fetchone()


def keep_pending(connection: Connection[Any], statements: VectorStatements,
                       place: tuple[str, str], seq: int, msg_id: bytes | None) -> None:
    """Insert the rows LedgerStore set in :data:`PENDING` for this append of
    ``place`` (namespace, session), at the entry ``seq`` (``msg_id``: only if that entry holds it),
    in the caller's transaction. Nothing pending: nothing sent."""
    ns, session = place
    rows = PENDING.get()
    if rows is None or rows.session != session or not rows.paths:
        return
    connection.execute(statements.insert, {
        "ns": ns, "sid": session, "seq": seq, "msg_id": msg_id, "expires": rows.expires,
        "paths": rows.paths, "vecs": rows.vectors})


class VectorSearch:
    """The PostgreSQL backend's pgvector search (``vectors``: None when not usable)."""

    vectors: VectorStatements | None = None
    options: StoreOptions

    def _connection(self) -> AbstractContextManager[Connection[Any]]:
        raise NotImplementedError  # pragma: no cover -- the backend's

    @property
    def searches_by_distance(self) -> bool:
        """Whether pgvector was found usable when the backend opened."""
        return self.vectors is not None

    def vector_search(self, prefix: str, query: list[float], distance: str, *,
                            limit: int, offset: int) -> list[tuple[str, float, RawHistory]]:
        """A page of the live items under ``prefix`` that have rows at their newest
        version, best first: (session, score, that newest entry)."""
        assert self.vectors is not None
        with self._connection() as connection:
            cursor = connection.execute(
                self.vectors.search(distance),
                {**self._vector_params(prefix), "q": _text(query), "limit": limit,
                 "offset": offset},
                binary=True)
            rows = cursor.fetchall()
        return [(sid, float(score), RawHistory([(version, bytes(body))], version, first, ledger))
                for sid, score, version, first, ledger, body in rows]

    def vector_unrowed(self, prefix: str) -> list[tuple[str, RawHistory]]:
        """The live items under ``prefix`` with no rows at their newest version:
        (session, that newest entry)."""
        assert self.vectors is not None
        with self._connection() as connection:
            cursor = connection.execute(self.vectors.unrowed, self._vector_params(prefix),
                                              binary=True)
            rows = cursor.fetchall()
        return [(sid, RawHistory([(version, bytes(body))], version, first, ledger))
                for sid, version, first, ledger, body in rows]

    def vector_backfill(self, rows: list[tuple[int, VectorRows]]) -> None:
        """Keep the rows of items found without them, each at its entry's seq (an
        entry trimmed meanwhile keeps none: its item has a newer version)."""
        assert self.vectors is not None
        with self._connection() as connection:
            for seq, item in rows:
                try:
                    with connection.transaction():
                        connection.execute(self.vectors.insert, {
                            "ns": self.options.namespace, "sid": item.session, "seq": seq,
                            "msg_id": None, "expires": item.expires, "paths": item.paths,
                            "vecs": item.vectors})
                except psycopg.errors.ForeignKeyViolation:
                    continue

    def vector_count(self, prefix: str) -> int:
        """How many live items under ``prefix`` have rows at their newest version."""
        assert self.vectors is not None
        with self._connection() as connection:
            cursor = connection.execute(self.vectors.count, self._vector_params(prefix))
            row = cursor.fetchone()
        return int(row[0]) if row is not None else 0

    def _vector_params(self, prefix: str) -> dict[str, Any]:
        return {"ns": self.options.namespace, "prefix": prefix,
                "upper": prefix_upper_bound(prefix), "now": self.options.clock()}


def _text(vector: list[float]) -> str:
    """pgvector's text form of a vector."""
    return "[" + ",".join(map(repr, map(float, vector))) + "]"
