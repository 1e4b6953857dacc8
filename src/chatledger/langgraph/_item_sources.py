"""What LangGraph's SQLite and PostgreSQL stores keep beside an item and
``BaseStore`` does not return: its expiry and TTL, and the fields it was
embedded on. Read from their tables (``store``, ``store_vectors``), whose
``prefix`` is the namespace joined with ``.`` (a label never holds one).

``read_source`` serves the sync stores (``SqliteStore``, ``PostgresStore``),
``aread_source`` the async ones (``AsyncSqliteStore``, ``AsyncPostgresStore``);
any other store gives None: its items' TTLs cannot be read.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from langgraph.store.base import BaseStore

from ._item_copying import Key, SourceFacts, epoch_of

__all__ = ["aread_source", "read_source"]

_TTL_SQL = ("SELECT prefix, key, expires_at, ttl_minutes FROM store "
            "WHERE expires_at IS NOT NULL OR ttl_minutes IS NOT NULL")
_FIELDS_SQL = "SELECT prefix, key, field_name FROM store_vectors"


def _kind(source: BaseStore) -> str | None:
    """``"sqlite"`` or ``"postgres"`` for LangGraph's stores of those, else None."""
    module = type(source).__module__
    if module.startswith("langgraph.store.sqlite"):
        return "sqlite"
    if module.startswith("langgraph.store.postgres"):
        return "postgres"
    return None


def read_source(source: BaseStore) -> SourceFacts | None:
    """The TTLs and index fields of a sync SqliteStore's or PostgresStore's items."""
    if _kind(source) is None or not hasattr(source, "_cursor"):
        return None
    indexed = bool(getattr(source, "index_config", None))
    with source._cursor() as cursor:
        cursor.execute(_TTL_SQL)
        expiries = list(cursor.fetchall())
    fields = None
    if indexed:
        with source._cursor() as cursor:
            cursor.execute(_FIELDS_SQL)
            fields = list(cursor.fetchall())
    return _facts(type(source).__name__, expiries, fields)


async def aread_source(source: BaseStore) -> SourceFacts | None:
    """The TTLs and index fields of an AsyncSqliteStore's or AsyncPostgresStore's items."""
    kind = _kind(source)
    if kind is None or not hasattr(source, "_cursor"):
        return None
    indexed = bool(getattr(source, "index_config", None))
    expiries = await _afetch(source, kind, _TTL_SQL)
    fields = await _afetch(source, kind, _FIELDS_SQL) if indexed else None
    return _facts(type(source).__name__, expiries, fields)


async def _afetch(source: Any, kind: str, sql: str) -> list[Any]:
    if kind == "sqlite":
        async with source.conn.execute(sql) as cursor:
            return list(await cursor.fetchall())
    async with source._cursor() as cursor:
        await cursor.execute(sql)
        return list(await cursor.fetchall())


def _facts(source: str, expiries: Iterable[Any], fields: Iterable[Any] | None) -> SourceFacts:
    found: dict[Key, tuple[float | None, float | None]] = {}
    for row in expiries:
        prefix, key, expires, ttl = _columns(row, ("prefix", "key", "expires_at", "ttl_minutes"))
        found[(_namespace(prefix), str(key))] = (epoch_of(expires),
                                                 None if ttl is None else float(ttl))
    by_item: dict[Key, list[str]] | None = None
    if fields is not None:
        by_item = {}
        for row in fields:
            prefix, key, name = _columns(row, ("prefix", "key", "field_name"))
            by_item.setdefault((_namespace(prefix), str(key)), []).append(str(name))
    return SourceFacts(source, found, by_item)


def _columns(row: Any, names: tuple[str, ...]) -> tuple[Any, ...]:
    """A row as a tuple: PostgresStore's cursors give dicts, SQLite's tuples or Rows."""
    if isinstance(row, dict):
        return tuple(row[name] for name in names)
    return tuple(row)


def _namespace(prefix: str) -> tuple[str, ...]:
    return tuple(str(prefix).split("."))
