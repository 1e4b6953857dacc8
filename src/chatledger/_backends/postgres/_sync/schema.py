# Generated from src/chatledger/_backends/postgres/_async/schema.py by scripts/unasync.py: edit that file, not this one.
"""Bringing a PostgreSQL database's chatledger schema up to date, and checking it.

:func:`migrate` applies the steps of a migration chain (the backend's
``migrations``: :data:`~..sql.SCHEMA`) that the database lacks (:mod:`..migrations`
decides which, and refuses a newer one), in one transaction that first takes a
transaction-level advisory lock: two processes that migrate at once run one after
the other, and the second finds nothing left to do. A failed step rolls back whole.
"""

from __future__ import annotations

from typing import Any

from psycopg import Connection

from ...migrations import Migrations
from ..sql import MIGRATION_LOCK, Statements

__all__ = ["migrate", "schema_version"]


def migrate(connection: Connection[Any], sql: Statements, where: str,
                  schema: Migrations[str]) -> list[int]:
    """Apply the missing migrations; return the versions applied (none: up to date)."""
    applied: list[int] = []
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        connection.execute(sql.create_versions)
        for version, step in schema.pending(_current(connection, sql), where):
            connection.execute(sql.step(step))
            connection.execute(sql.record_version, (version,))
            applied.append(version)
    return applied


def schema_version(connection: Connection[Any], sql: Statements) -> int:
    """The version the database's schema is at (0: no chatledger tables)."""
    with connection.transaction():
        cursor = connection.execute(sql.version_table, (f"{sql.schema}.schema_version",))
        row = cursor.fetchone()
        if row is None or not row[0]:
            return 0
        return _current(connection, sql)


def _current(connection: Connection[Any], sql: Statements) -> int:
    cursor = connection.execute(sql.current_version)
    row = cursor.fetchone()
    return int(row[0]) if row else 0
