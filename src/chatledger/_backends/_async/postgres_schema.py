"""Bringing a PostgreSQL database's chatledger schema up to date, and checking it.

:func:`migrate` applies the steps of :data:`~.._postgres_sql.MIGRATIONS` that
the database lacks, in one transaction that first takes a transaction-level
advisory lock: two processes that migrate at once run one after the other,
and the second finds nothing left to do. A failed step rolls back whole.
"""

from __future__ import annotations

from typing import Any

from psycopg import AsyncConnection

from ..._errors import ConfigError
from .._postgres_sql import MIGRATION_LOCK, SCHEMA_VERSION, Statements

__all__ = ["migrate", "schema_version"]


async def migrate(connection: AsyncConnection[Any], sql: Statements) -> list[int]:
    """Apply the missing migrations; return the versions applied (none: up to date)."""
    applied: list[int] = []
    async with connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        await connection.execute(sql.create_versions)
        current = await _current(connection, sql)
        _check_not_newer(current)
        for version in range(current + 1, SCHEMA_VERSION + 1):
            await connection.execute(sql.migration(version - 1))
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


def _check_not_newer(version: int) -> None:
    if version > SCHEMA_VERSION:
        raise ConfigError(f"the database's chatledger schema is at version {version}, newer "
                          f"than this chatledger's {SCHEMA_VERSION}: upgrade chatledger")
