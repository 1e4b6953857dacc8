"""``chatledger migrate --from-langchain*``: import what LangChain's Redis, PostgreSQL or
DynamoDB chat message histories wrote."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import click

from .._url import redact
from .._wording import install_hint
from .console import progress_callback
from .failures import FAILED, Unusable, hide_password, reported_errors
from .from_langgraph import migrate_from_langgraph, usage_error_if_mixed
from .from_langgraph_store import migrate_from_langgraph_store
from .target import Target, target_options

_EXTRAS = install_hint("langchain,redis")
_POSTGRES_EXTRAS = install_hint("langchain,postgres")
_DYNAMODB_EXTRAS = install_hint("langchain,redis,dynamodb")


@click.command()
@target_options
@click.option("--from-langchain", "source", default=None, metavar="REDIS_URL",
              help="The Redis that langchain_community's RedisChatMessageHistory wrote to.")
@click.option("--key-prefix", default="message_store:", show_default=True,
              help="The key_prefix the application gave RedisChatMessageHistory.")
@click.option("--from-langchain-postgres", "postgres_source", default=None,
              metavar="POSTGRES_URL",
              help="The PostgreSQL that langchain-postgres's PostgresChatMessageHistory "
                   "wrote to (with --table).")
@click.option("--from-langchain-dynamodb", "dynamodb_source", default=None,
              metavar="TABLE",
              help="The DynamoDB table DynamoDBChatMessageHistory wrote to: TABLE, or "
                   "dynamodb://TABLE?region=...&endpoint_url=... (credentials from the AWS "
                   "chain).")
@click.option("--table", default=None, metavar="NAME",
              help="PostgresChatMessageHistory's table (NAME or SCHEMA.NAME).")
@click.option("--from-langgraph", "langgraph_source", default=None, metavar="SOURCE",
              help="LangGraph threads: the database a PostgresSaver or SqliteSaver wrote "
                   "(postgresql://..., sqlite:///PATH), or module:factory returning any saver.")
@click.option("--from-langgraph-store", "store_source", default=None, metavar="SOURCE",
              help="LangGraph store items: the database a PostgresStore or SqliteStore wrote "
                   "(postgresql://..., sqlite:///PATH), or module:factory returning any store.")
@click.option("--thread-id", "thread_ids", multiple=True, metavar="ID",
              help="With --from-langgraph: copy this thread (repeatable; default every thread; "
                   "needed for savers that cannot list their threads, such as DynamoDBSaver).")
@click.option("--verify/--no-verify", default=True, show_default=True,
              help="With --from-langgraph(-store): compare both sides after the copy.")
@click.option("--to", "destination", default=None, metavar="URL",
              help="The chatledger store to import into (default: --url).")
@click.option("--dry-run", is_flag=True, help="Decode and count everything, store nothing.")
@click.pass_obj
def migrate(target: Target, *, source: str | None, key_prefix: str,
            postgres_source: str | None, dynamodb_source: str | None, table: str | None,
            langgraph_source: str | None, store_source: str | None,
            thread_ids: tuple[str, ...], verify: bool,
            destination: str | None, dry_run: bool) -> None:
    """Import RedisChatMessageHistory lists, or a PostgresChatMessageHistory or
    DynamoDBChatMessageHistory table; or copy LangGraph threads from another saver,
    or LangGraph store items from another store.

    Each list (or each session of the table) becomes a chatledger session,
    oldest message first. Idempotent: running it again imports nothing new.
    Entries that cannot be decoded are listed with their keys (or session and
    row id), and the rest is imported; the exit status is then 1. A source
    that cannot be read exits 2.

    --from-langgraph copies every checkpoint of every thread (ids, parents,
    metadata, pending writes and interrupts kept), then compares both sides
    thread by thread; a thread refused, written during the copy or differing
    exits 1. Running it again copies only what is missing.
    --from-langgraph-store copies every item of every namespace of a LangGraph
    store (TTLs read from PostgresStore's and SqliteStore's tables), then checks
    nothing is left to copy.

    \b
    Example: chatledger migrate --from-langchain redis://localhost:6379/0 --to sqlite:///bot.db
    Example: chatledger migrate --from-langchain-postgres postgresql://db/app --table chat_history
    Example: chatledger migrate --from-langchain-dynamodb SessionTable --to dynamodb://chatledger
    Example: chatledger migrate --from-langgraph postgresql://db/app --to postgresql://db/app
    Example: chatledger migrate --from-langgraph-store sqlite:///memories.db --to sqlite:///bot.db
    """
    usage_error_if_mixed([source, postgres_source, dynamodb_source, langgraph_source,
                          store_source])
    if postgres_source is not None and not table:
        raise click.UsageError("--from-langchain-postgres needs --table NAME")
    if destination is not None:
        target = dataclasses.replace(target, url=destination)
    if store_source is not None:
        migrate_from_langgraph_store(target, store_source, dry_run=dry_run, verify=verify)
    elif langgraph_source is not None:
        migrate_from_langgraph(target, langgraph_source, thread_ids, dry_run=dry_run,
                               verify=verify)
    elif postgres_source is not None:
        _from_postgres(target, postgres_source, str(table), dry_run)
    elif dynamodb_source is not None:
        _from_dynamodb(target, dynamodb_source, dry_run)
    else:
        _from_redis(target, str(source), key_prefix, dry_run)


def _missing(exc: ImportError, extras: str) -> Unusable:
    """The module migrate could not import, and the extras that bring it."""
    if exc.name:
        return Unusable(f"migrate needs {exc.name}: {extras}")
    return Unusable(f"migrate cannot import its extras ({exc}): {extras}")


def _from_redis(target: Target, source: str, key_prefix: str, dry_run: bool) -> None:
    try:
        from ..langchain._migrate import migrate_from_langchain  # noqa: PLC0415 -- optional extras
    except ImportError as exc:
        raise _missing(exc, _EXTRAS) from exc
    import redis  # noqa: PLC0415 -- present once the import above succeeded

    _migrate(target, source, what=f"{key_prefix}*", unit="lists", driver_error=redis.RedisError,
             migrate=lambda store, **kw: migrate_from_langchain(source, key_prefix, store, **kw),
             dry_run=dry_run)


def _from_postgres(target: Target, source: str, table: str, dry_run: bool) -> None:
    try:
        from ..langchain._migrate_postgres import (  # noqa: PLC0415 -- optional extras
            migrate_from_langchain_postgres,
        )
    except ImportError as exc:
        raise _missing(exc, _POSTGRES_EXTRAS) from exc
    import psycopg  # noqa: PLC0415 -- present once the import above succeeded

    _migrate(target, source, what=f"table {table}", unit="sessions", driver_error=psycopg.Error,
             migrate=lambda store, **kw: migrate_from_langchain_postgres(source, table, store,
                                                                         **kw),
             dry_run=dry_run)


def _from_dynamodb(target: Target, source: str, dry_run: bool) -> None:
    try:
        from ..langchain._migrate_dynamodb import (  # noqa: PLC0415 -- optional extras
            migrate_from_langchain_dynamodb,
        )
    except ImportError as exc:
        raise _missing(exc, _DYNAMODB_EXTRAS) from exc
    from .._backends.dynamodb.io import table_name  # noqa: PLC0415 -- needs boto3
    from .._errors import ChatLedgerError  # noqa: PLC0415
    from .._url import parse_url  # noqa: PLC0415

    table, where = source, {}
    if source.startswith("dynamodb://"):
        table, where = table_name(source), parse_url(source).query
    _migrate(target, source, what=f"table {table}", unit="sessions",
             driver_error=ChatLedgerError,
             migrate=lambda store, **kw: migrate_from_langchain_dynamodb(
                 table, store, region=where.get("region"),
                 endpoint_url=where.get("endpoint_url"), **kw),
             dry_run=dry_run)


def _migrate(target: Target, source: str, *, what: str, unit: str,
             driver_error: type[Exception], migrate: Callable[..., Any],
             dry_run: bool) -> None:
    """One migration from ``source`` (``what`` of it) into the target, with progress in ``unit``;
    the source's driver failing (``driver_error``) is a command error without its password."""
    click.echo(f"{'dry run: ' if dry_run else ''}{redact(source)} ({what}) -> "
               f"{redact(target.url)}", err=True)
    with target.store() as store, reported_errors(target.url), \
            progress_callback(f"migrating {unit}") as progress:
        try:
            report = migrate(store, dry_run=dry_run, progress=progress)
        except driver_error as exc:
            raise Unusable(hide_password(f"cannot read {redact(source)}: {type(exc).__name__}: "
                                         f"{exc}", source)) from exc
    _finish(report)


def _finish(report: Any) -> None:
    click.echo(report.summary())
    if report.undecodable:
        raise SystemExit(FAILED)


COMMANDS = (migrate,)
