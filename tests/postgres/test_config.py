"""postgresql:// URLs and options: checked at open, passed to libpq as given."""

from __future__ import annotations

from urllib.parse import quote

import psycopg
import pytest
from psycopg import sql

from chatledger import BackendUnavailable, ConfigError, open_store, user
from chatledger._backends.postgres.config import postgres_settings
from chatledger._backends.postgres.sql import SCHEMA_VERSION
from chatledger._options import split_options
from chatledger._url import parse_url
from tests.postgres.conftest import OpenPostgres


def settings(url: str, **kwargs: object):  # type: ignore[no-untyped-def]
    parsed = parse_url(url)
    options, extra = split_options(parsed.query, kwargs)
    return postgres_settings(parsed, options, extra)


def test_the_url_becomes_a_libpq_conninfo_with_tls_options() -> None:
    found = settings("postgresql://app:s%40cret@db1:5433,db2/ledger?sslmode=verify-full"
                     "&sslrootcert=/etc/ca.pem&application_name=bot&timeout=5")
    params = psycopg.conninfo.conninfo_to_dict(found.conninfo)
    assert params == {"host": "db1,db2", "port": "5433,5432", "dbname": "ledger", "user": "app",
                      "password": "s@cret", "sslmode": "verify-full",
                      "sslrootcert": "/etc/ca.pem", "application_name": "bot",
                      "connect_timeout": "5"}
    assert (found.schema, found.migrate, found.max_connections) == ("chatledger", False, 20)


def test_a_url_without_host_leaves_it_to_libpq_and_its_options() -> None:
    found = settings("postgresql://?host=/run/postgresql")
    assert psycopg.conninfo.conninfo_to_dict(found.conninfo) == {
        "host": "/run/postgresql", "application_name": "chatledger", "connect_timeout": "2"}


def test_schema_migrate_and_pool_size_are_options() -> None:
    found = settings("postgres://h/db?schema=Mixed%20Case&migrate=yes", max_connections=3)
    assert (found.schema, found.migrate, found.max_connections) == ("Mixed Case", True, 3)


@pytest.mark.parametrize(("url", "message"), [
    ("postgresql://h/db?sslmod=require", "unknown option 'sslmod'"),
    ("postgresql://h/db?max_connections=0", "max_connections='0'"),
    ("postgresql://h/db?max_connections=many", "max_connections='many'"),
    ("postgresql://h/db?schema=", "schema=''"),
    ("postgresql://h/db?migrate=maybe", "migrate='maybe' is not a boolean"),
])
def test_bad_options_are_refused_before_any_io(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        open_store(url)


def test_a_missing_schema_is_refused_at_open_saying_what_to_run(postgres_url: str) -> None:
    with pytest.raises(ConfigError, match=r"at version 0.*chatledger migrate-schema URL"):
        open_store(f"{postgres_url}?schema=never_migrated")


def test_a_schema_option_places_the_tables(postgres_url: str, raw: psycopg.Connection) -> None:
    with open_store(f"{postgres_url}?schema=elsewhere&migrate=true") as store:
        store.session("s").append([user("hi")])
    row = raw.execute("SELECT count(*) FROM elsewhere.entries").fetchone()
    assert row == (1,)


@pytest.mark.parametrize(("schema", "message"), [
    ("a%b", "'%'"),  # psycopg reads % in a statement as a placeholder's start
    ("100%", "'%'"),
    ("\u00e9" * 32, "64 bytes"),  # 32 characters, over PostgreSQL's 63-byte names
])
def test_a_schema_name_that_cannot_be_used_as_given_is_refused_at_open(
        postgres_url: str, schema: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        open_store(postgres_url, schema=schema, migrate=True)
    with pytest.raises(ConfigError, match=message):
        open_store(f"{postgres_url}?schema={quote(schema)}&migrate=true")


def test_any_other_schema_name_is_quoted_as_data(postgres_url: str,
                                                 raw: psycopg.Connection) -> None:
    """Quotes, braces, a placeholder's look-alikes and a 63-byte name: an identifier,
    quoted, in every statement."""
    for schema in ['we"ird {s} $1 ?', "\u00e9" * 31 + "x"]:
        with open_store(postgres_url, schema=schema, migrate=True) as store:
            session = store.session("s")
            session.append([user("hi")], expect_version=0)
            assert [m.text for m in session.read(last=5)] == ["hi"]
            assert session.delete() is True
        quoted = sql.Identifier(schema).as_string(raw)
        assert raw.execute(f"SELECT max(version) FROM {quoted}.schema_version").fetchone() == (
            SCHEMA_VERSION,)


def test_connections_carry_the_application_name(open_postgres: OpenPostgres,
                                                raw: psycopg.Connection) -> None:
    store = open_postgres(application_name="support-bot")
    store.session("s").append([user("hi")])
    names = raw.execute("SELECT application_name FROM pg_stat_activity").fetchall()
    assert ("support-bot",) in names


def test_tls_required_by_the_client_fails_loudly_on_a_plain_server(
    open_postgres: OpenPostgres,
) -> None:
    with pytest.raises(BackendUnavailable, match="SSL"):
        open_postgres(sslmode="require", timeout=1).session("s").read()
