"""Bringing a PostgreSQL database's chatledger schema up to date, and checking it.

:func:`migrate` applies the steps of a migration chain (the backend's
``migrations``: :data:`~..sql.SCHEMA`) that the database lacks (:mod:`..migrations`
decides which, and refuses a newer one), in one transaction that first takes a
transaction-level advisory lock: two processes that migrate at once run one after
the other, and the second finds nothing left to do. A failed step rolls back whole.
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection

from ...migrations import Migrations
from ..sql import MIGRATION_LOCK, Statements

__all__ = ["migrate", "schema_version"]


async def migrate(connection: AsyncConnection[Any], sql: Statements, where: str,
                  schema: Migrations[str]) -> list[int]:
    """Apply the missing migrations; return the versions applied (none: up to date)."""
    applied: list[int] = []
    async with connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        await connection.execute(sql.create_versions)
        for version, step in schema.pending(await _current(connection, sql), where):
            await connection.execute(sql.step(step))
            await connection.execute(sql.record_version, (version,))
            applied.append(version)
    return applied


async def schema_version(connection: AsyncConnection[Any], sql: Statements) -> int:
    """The version the database's schema is at (0: no chatledger tables)."""
    async with connection.transaction():
        cursor = await connection.execute(sql.version_table, (f"{sql.schema}.schema_version",))
        row = await cursor.fetchone()
        if row is None or not row[0]:
            return 0
        return await _current(connection, sql)


async def _current(connection: AsyncConnection[Any], sql: Statements) -> int:
    cursor = await connection.execute(sql.current_version)
    row = await cursor.fetchone()
    return int(row[0]) if row else 0
