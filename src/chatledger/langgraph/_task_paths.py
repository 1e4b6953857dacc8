"""The task path of each task's writes on a checkpoint, read from the savers that
keep it: LangGraph's own (InMemorySaver, SqliteSaver, PostgresSaver and their async
twins) store it beside the writes, as the key that orders one step's writes, but
``get_tuple`` and ``list`` do not return it.

A copy that keeps it (``copy.py``) stores a thread stopped mid-step so that the
writes of a task rerun after the copy sort among the copied ones as they would
on the source (a ``DeltaChannel`` replays one step's writes in that order). For
any other saver, or a table without the column, None: the copy then gives each
task a rank that keeps the source's order of the copied tasks.
"""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

__all__ = ["atask_paths", "task_paths"]

_SQLITE = ("SELECT task_id, task_path FROM writes WHERE thread_id = ? AND checkpoint_ns = ? "
           "AND checkpoint_id = ?")
_POSTGRES = ("SELECT task_id, task_path FROM checkpoint_writes WHERE thread_id = %s "
             "AND checkpoint_ns = %s AND checkpoint_id = %s")


def task_paths(source: Any, thread_id: str, ns: str, checkpoint_id: str) -> dict[str, str] | None:
    """``{task_id: task_path}`` of the checkpoint's writes on a sync ``source``, or None."""
    where = (thread_id, ns, checkpoint_id)
    kind = type(source).__name__
    if isinstance(source, InMemorySaver):
        return _memory(source, where)
    if kind == "SqliteSaver" and getattr(source, "_has_task_path", False):
        with source.cursor(transaction=False) as cursor:
            return _paths(cursor.execute(_SQLITE, where).fetchall())
    if kind == "PostgresSaver":
        with source._cursor() as cursor:
            cursor.execute(_POSTGRES, where)
            return _paths(cursor.fetchall())
    return None


async def atask_paths(source: Any, thread_id: str, ns: str,
                      checkpoint_id: str) -> dict[str, str] | None:
    """:func:`task_paths` of an async ``source``."""
    where = (thread_id, ns, checkpoint_id)
    kind = type(source).__name__
    if isinstance(source, InMemorySaver):
        return _memory(source, where)
    if kind == "AsyncSqliteSaver" and getattr(source, "_has_task_path", False):
        async with source.lock, source.conn.execute(_SQLITE, where) as cursor:
            return _paths(await cursor.fetchall())
    if kind == "AsyncPostgresSaver":
        async with source._cursor() as cursor:
            await cursor.execute(_POSTGRES, where)
            return _paths(await cursor.fetchall())
    return None


def _memory(source: InMemorySaver, where: tuple[str, str, str]) -> dict[str, str]:
    # Its writes: {(task_id, idx): (task_id, channel, typed value, task_path)}.
    return {str(task): str(path) for task, _, _, path in source.writes.get(where, {}).values()}


def _paths(rows: list[Any]) -> dict[str, str]:
    """A query's rows (tuples, or psycopg's dict rows) as ``{task_id: task_path}``."""
    return {str(row["task_id"] if isinstance(row, dict) else row[0]):
            str(row["task_path"] if isinstance(row, dict) else row[1]) for row in rows}
