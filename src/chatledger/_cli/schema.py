"""``chatledger migrate-schema URL`` (PostgreSQL) and ``chatledger create-table URL``
(DynamoDB): make the storage a store needs, with rights the application need not have."""

from __future__ import annotations

import dataclasses

import click

from .._backends.provisioning import CreatesTable, MigratesSchema
from .._sync.store import open_store, raw_access
from .._url import parse_url
from .console import say
from .failures import reported_errors
from .target import Target, target_options

_SCHEMES = ("postgresql", "postgres")


@click.command("migrate-schema")
@target_options
@click.argument("url", required=False)
@click.pass_obj
def migrate_schema(target: Target, url: str | None) -> None:
    """Create chatledger's tables in a PostgreSQL database, or bring them up to date.

    Idempotent, and safe when several processes run it at once (they take an
    advisory lock and apply each step once). Run it with a role that may
    create tables, before the application opens its stores; or let a store
    do it on open with ?migrate=true. A SQLite file is migrated by whoever opens
    it; Redis and DynamoDB have no schema.

    \b
    Example: chatledger migrate-schema "postgresql://admin@db/app?schema=chatledger"
    """
    if url is not None:
        target = dataclasses.replace(target, url=url)
    with reported_errors(target.url):
        if parse_url(target.url).scheme not in _SCHEMES:
            raise click.UsageError(f"migrate-schema is for postgresql:// URLs; "
                                   f"{parse_url(target.url).scheme}:// needs no migration")
        with open_store(target.url, migrate=True, **target.options) as store:
            schema = raw_access(store)
            assert isinstance(schema, MigratesSchema)  # a postgresql:// store, as checked
    applied = schema.migrated
    done = f"applied migration(s) {', '.join(map(str, applied))}" if applied else "up to date"
    say(f"{store.url}: chatledger schema at version {schema.schema_version} ({done})")


@click.command("create-table")
@target_options
@click.argument("url", required=False)
@click.pass_obj
def create_table(target: Target, url: str | None) -> None:
    """Create chatledger's DynamoDB table, unless it exists.

    On-demand billing, TTL enabled on the attribute ``exp``, keys ``pk``
    (partition) and ``sk`` (sort) and the index ``sessions`` (docs/backends.md
    says what each holds). Idempotent; or let a store do it on open with
    ?create=true.

    \b
    Example: chatledger create-table "dynamodb://chatledger?region=eu-west-1"
    """
    if url is not None:
        target = dataclasses.replace(target, url=url)
    with reported_errors(target.url):
        if parse_url(target.url).scheme != "dynamodb":
            raise click.UsageError(f"create-table is for dynamodb:// URLs, not "
                                   f"{parse_url(target.url).scheme}://")
        with open_store(target.url, create=True, **target.options) as store:
            table = raw_access(store)
            assert isinstance(table, CreatesTable)  # a dynamodb:// store, as checked
    say(f"{store.url}: table {table.table} " + ("created (on-demand, TTL on exp)"
                                                if table.created else "exists already"))


COMMANDS = [migrate_schema, create_table]
