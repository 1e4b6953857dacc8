"""Schema migrations: recorded, idempotent, one apply when processes start at once."""

from __future__ import annotations

import threading
import uuid

import psycopg
import pytest
from click.testing import CliRunner

from chatledger import ConfigError, open_store, user
from chatledger._backends.migrations import Migrations
from chatledger._backends.postgres._sync.backend import PostgresBackend
from chatledger._backends.postgres._sync.schema import migrate, schema_version
from chatledger._backends.postgres.sql import MIGRATIONS, SCHEMA_VERSION, statements
from chatledger._backends.provisioning import MigratesSchema
from chatledger._cli import main

ALL = list(range(1, SCHEMA_VERSION + 1))


def _schema() -> str:
    return f"s_{uuid.uuid4().hex[:10]}"


def test_migrate_schema_creates_the_tables_then_finds_nothing_to_do(
    postgres_url: str, raw: psycopg.Connection,
) -> None:
    url = f"{postgres_url}?schema={_schema()}"
    first = CliRunner().invoke(main, ["migrate-schema", url])
    assert first.exit_code == 0, first.output
    applied = ", ".join(map(str, ALL))
    assert f"schema at version {SCHEMA_VERSION} (applied migration(s) {applied})" in first.output
    again = CliRunner().invoke(main, ["migrate-schema", url])
    assert again.exit_code == 0, again.output
    assert "(up to date)" in again.output
    with open_store(url) as store:  # no migrate option needed any more
        assert store.session("s").append([user("hi")]).version == 1


def test_migrate_schema_is_for_postgres_urls_only(tmp_path: object) -> None:
    result = CliRunner().invoke(main, ["migrate-schema", f"sqlite:///{tmp_path}/x.db"])
    assert result.exit_code == 2
    assert "needs no migration" in result.output


def test_an_unreachable_database_exits_2(postgres_url: str) -> None:
    result = CliRunner().invoke(main, ["migrate-schema", "--deadline", "1",
                                       "postgresql://postgres@127.0.0.1:1/none"])
    assert result.exit_code == 2, result.output


def test_processes_that_migrate_at_once_apply_each_step_once(
    postgres_url: str, raw: psycopg.Connection,
) -> None:
    url = f"{postgres_url}?schema={_schema()}&migrate=true"
    barrier = threading.Barrier(6)
    applied: list[list[int]] = []
    errors: list[BaseException] = []

    def start() -> None:
        barrier.wait()
        try:
            with open_store(url) as store:
                assert isinstance(store._backend, MigratesSchema)
                applied.append(store._backend.migrated)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(applied) == [[]] * 5 + [ALL]
    schema = url.split("schema=")[1].split("&", maxsplit=1)[0]
    rows = raw.execute(f"SELECT version FROM {schema}.schema_version").fetchall()
    assert rows == [(version,) for version in ALL]


def test_a_newer_schema_is_refused(postgres_url: str, raw: psycopg.Connection) -> None:
    schema = _schema()
    with open_store(f"{postgres_url}?schema={schema}&migrate=true"):
        pass
    raw.execute(f"INSERT INTO {schema}.schema_version (version) VALUES (99)")
    for option in ("false", "true"):
        try:
            open_store(f"{postgres_url}?schema={schema}&migrate={option}")
        except ConfigError as exc:
            assert f"at version 99, newer than this chatledger's {SCHEMA_VERSION}" in str(exc)
            assert schema in str(exc)
        else:
            raise AssertionError("a newer schema was accepted")


def test_the_steps_apply_in_order_each_once_and_a_failed_one_rolls_back_whole(
    raw: psycopg.Connection,
) -> None:
    """The mechanism, with a test-only list: the second extra step needs the first's table."""
    schema = _schema()
    sql = statements(schema)
    n = SCHEMA_VERSION
    steps = Migrations([*MIGRATIONS, "CREATE TABLE {s}.extra (n int)",
                        "INSERT INTO {s}.extra VALUES (3)"])
    failing = Migrations([*steps.steps, "INSERT INTO {s}.missing VALUES (4)"])
    assert migrate(raw, sql, "here", Migrations(MIGRATIONS)) == ALL
    with pytest.raises(psycopg.errors.UndefinedTable):
        migrate(raw, sql, "here", failing)
    assert schema_version(raw, sql) == n  # nothing of the three extra steps kept either
    assert migrate(raw, sql, "here", steps) == [n + 1, n + 2]
    assert migrate(raw, sql, "here", steps) == []
    assert raw.execute(f"SELECT n FROM {schema}.extra").fetchall() == [(3,)]
    assert raw.execute(f"SELECT version FROM {schema}.schema_version ORDER BY version"
                       ).fetchall() == [(version,) for version in range(1, n + 3)]
    with pytest.raises(ConfigError, match=f"at version {n + 2}, newer than this chatledger's {n}"):
        migrate(raw, sql, "here", Migrations(MIGRATIONS))


def test_an_older_database_is_refused_then_migrates_and_keeps_its_sessions(
    postgres_url: str, raw: psycopg.Connection, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A database a step behind the code: refused, naming the command; migrated with
    migrate=true, its sessions kept. A test-only second step stands for the next one."""
    schema = _schema()
    url = f"{postgres_url}?schema={schema}"
    with open_store(f"{url}&migrate=true", namespace="n") as store:
        store.session("s").append([user("before")])
    newer = Migrations([*MIGRATIONS, "CREATE TABLE {s}.extra (n int)"])
    monkeypatch.setattr(PostgresBackend, "migrations", newer)
    with pytest.raises(ConfigError, match=f"at version {SCHEMA_VERSION}, this chatledger "
                                          f"needs {SCHEMA_VERSION + 1}; run `chatledger "
                                          "migrate-schema URL`"):
        open_store(url)
    with open_store(f"{url}&migrate=true", namespace="n") as store:
        assert isinstance(store._backend, MigratesSchema)
        assert store._backend.migrated == [SCHEMA_VERSION + 1]
        session = store.session("s")
        assert session.append([user("after")]).version == 2
        assert [m.text for m in session.read()] == ["before", "after"]
    found = raw.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{schema}.extra",)).fetchone()
    assert found == (True,)
