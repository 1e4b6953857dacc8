"""``chatledger migrate --from-langgraph SOURCE``: LangGraph threads from another saver.

SOURCE is the database a PostgresSaver or SqliteSaver wrote (``postgresql://...``,
``sqlite:///path.db``), or ``module:factory``: a callable that returns any
``BaseCheckpointSaver`` (or a context manager yielding one), for the savers
with no URL (DynamoDBSaver, a Redis saver, your own). The threads are copied
with :func:`chatledger.langgraph.copy_threads`, then compared thread by thread
with :func:`chatledger.langgraph.compare_threads`.
"""

from __future__ import annotations

import importlib
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from .._url import parse_url, redact
from .._wording import install_hint
from .console import counted, progress_callback
from .failures import FAILED, Unusable, hide_password, reported_errors
from .named import named_object
from .target import Target

__all__ = ["migrate_from_langgraph"]

_EXTRAS = install_hint("langgraph")


def migrate_from_langgraph(target: Target, source: str, thread_ids: Sequence[str], *,
                           dry_run: bool, verify: bool) -> None:
    """Copy, then compare; exit 1 when a thread was refused, changed or differs."""
    try:
        from ..langgraph import LedgerSaver, compare_threads, copy_threads  # noqa: PLC0415
        from ..langgraph._copying import ThreadsNotListed  # noqa: PLC0415
    except ImportError as exc:
        raise Unusable(f"migrate needs {exc.name or 'langgraph'}: {_EXTRAS}") from exc
    click.echo(f"{'dry run: ' if dry_run else ''}{redact(source)} (LangGraph threads) -> "
               f"{redact(target.url)}", err=True)
    with opened(source, SAVERS) as saver, target.store() as store, reported_errors(target.url):
        ledger = LedgerSaver(store)
        chosen = list(thread_ids) or _listed_threads(saver)
        with progress_callback("copying threads") as progress:
            try:
                report = copy_threads(saver, ledger, thread_ids=chosen, dry_run=dry_run,
                                      on_progress=progress)
            except ThreadsNotListed as exc:
                raise click.UsageError(exc.telling("--thread-id")) from exc
        click.echo(report.summary())
        differences = []
        if verify and not dry_run:
            with progress_callback("verifying threads") as progress:
                differences = compare_threads(saver, ledger, thread_ids=chosen,
                                              on_progress=progress)
            click.echo(_verdict(len(report.found), differences))
    if report.refused or report.changed or differences:
        raise SystemExit(FAILED)


def _verdict(threads: int, differences: Sequence[Any]) -> str:
    if not differences:
        return f"verified: {counted(threads, 'thread')} the same on both sides"
    lines = [f"{counted(len(differences), 'difference')} between the source and chatledger:"]
    return "\n".join(lines + [f"  {d}" for d in differences])


@dataclass(frozen=True)
class Sources:
    """What a ``migrate`` option opens: its PostgreSQL and SQLite classes, as
    ``module:Class``, each opened with ``from_conn_string``; ``module:factory`` for any
    other source."""

    option: str
    postgres: str
    sqlite: str
    table: str  # the SQLite class's table that holds what is copied
    holds: str  # what it holds, in words

    def opening(self, source: str) -> AbstractContextManager[Any]:
        scheme = source.split("://", 1)[0] if "://" in source else None
        if scheme in ("postgresql", "postgres"):
            opened = self._opened_class(self.postgres, "postgres", "postgresql")
            self._check_postgres_tables(source)
            return opened(source)
        if scheme == "sqlite":
            path = parse_url(source).path
            opened = self._opened_class(self.sqlite, "sqlite", "sqlite")
            if not path or not Path(path).exists():
                raise Unusable(f"no SQLite database at {path or source}")
            self._check_tables(path)
            return opened(path)
        if scheme is None and ":" in source:
            return _factory(source)
        raise click.UsageError(f"{self.option} takes postgresql://..., sqlite:///PATH or "
                               f"module:factory, not {redact(source)!r}")

    def _check_tables(self, path: str) -> None:
        """Refuse a file without the class's table, read only: opening it would
        create the table in the source file (the savers' setup), and a copy of nothing
        would read as a success."""
        uri = f"{Path(path).resolve().as_uri()}?mode=ro"
        try:
            with closing(sqlite3.connect(uri, uri=True)) as db:
                found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'"
                                   " AND name = ?", (self.table,)).fetchone()
        except sqlite3.Error as exc:
            raise Unusable(f"cannot read {path}: {type(exc).__name__}: {exc}") from exc
        if found is None:
            raise Unusable(f"{path} holds no {self.holds}: it has no {self.table!r} table "
                           f"(not a database that {self.sqlite.rpartition(':')[2]} wrote)")

    def _check_postgres_tables(self, source: str) -> None:
        """Refuse a database without the class's table (in its search path, where the
        class looks), as ``_check_tables`` refuses a SQLite file: the class would
        fail on its first query, in the driver's words."""
        import psycopg  # noqa: PLC0415 -- installed with langgraph-checkpoint-postgres

        with psycopg.connect(source, autocommit=True) as db:
            row = db.execute("SELECT to_regclass(%s)", (self.table,)).fetchone()
        if row is None or row[0] is None:
            raise Unusable(hide_password(
                f"{redact(source)} holds no {self.holds}: it has no {self.table!r} table "
                f"(not a database that {self.postgres.rpartition(':')[2]} wrote)", source))

    def _opened_class(self, spec: str, package: str, scheme: str,
                      ) -> Callable[[str], AbstractContextManager[Any]]:
        module, _, name = spec.partition(":")
        try:
            found: Any = getattr(importlib.import_module(module), name)
        except ImportError as exc:
            raise Unusable(f"migrate {self.option} {scheme}://... needs "
                           f"langgraph-checkpoint-{package}: pip install "
                           f"langgraph-checkpoint-{package}") from exc
        opened: Callable[[str], AbstractContextManager[Any]] = found.from_conn_string
        return opened


SAVERS = Sources("--from-langgraph", "langgraph.checkpoint.postgres:PostgresSaver",
                 "langgraph.checkpoint.sqlite:SqliteSaver", "checkpoints",
                 "LangGraph checkpoints")


@contextmanager
def opened(source: str, sources: Sources) -> Iterator[Any]:
    """The source saver (or store), closed on leaving; a source that cannot be
    opened is Unusable."""
    try:
        with sources.opening(source) as found:
            yield found
    except (Unusable, click.ClickException, SystemExit):
        raise
    except Exception as exc:  # the driver's: psycopg, sqlite3, boto3, the factory's own
        raise Unusable(hide_password(f"cannot read {redact(source)}: {type(exc).__name__}: "
                                     f"{exc}", source)) from exc


@contextmanager
def _factory(spec: str) -> Iterator[Any]:
    """``module:callable`` (``callable`` may be ``Class.method``), called with no arguments."""
    saver = named_object(spec)()
    if isinstance(saver, AbstractContextManager):
        with saver as entered:
            yield entered
    else:
        yield saver


def _listed_threads(saver: Any) -> list[str] | None:
    """The thread ids of a SqliteSaver or PostgresSaver, read from their table (one
    query, where ``list(None)`` would read every checkpoint); None for other savers."""
    kind = type(saver).__name__
    query = "SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id"
    if kind == "SqliteSaver":
        return [str(row[0]) for row in saver.conn.execute(query)]
    if kind == "PostgresSaver":
        with saver._cursor() as cursor:
            return [str(row["thread_id"]) for row in cursor.execute(query)]
    return None


def usage_error_if_mixed(sources: Sequence[str | None]) -> None:
    """Exactly one source: --from-langgraph(-store) or one of the chat-history ones."""
    if sum(s is not None for s in sources) != 1:
        raise click.UsageError(
            "give one of --from-langchain REDIS_URL, --from-langchain-postgres POSTGRES_URL "
            "(with --table), --from-langchain-dynamodb TABLE, --from-langgraph SOURCE, "
            "--from-langgraph-store SOURCE")
