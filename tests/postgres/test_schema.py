"""Schema migrations: recorded, idempotent, one apply when processes start at once."""

from __future__ import annotations

import threading
import uuid

import psycopg
from click.testing import CliRunner

from chatledger import ConfigError, open_store, user
from chatledger._backends._postgres_sql import SCHEMA_VERSION
from chatledger._cli import main


def _schema() -> str:
    return f"s_{uuid.uuid4().hex[:10]}"


def test_migrate_schema_creates_the_tables_then_finds_nothing_to_do(
    postgres_url: str, raw: psycopg.Connection,
) -> None:
    url = f"{postgres_url}?schema={_schema()}"
    first = CliRunner().invoke(main, ["migrate-schema", url])
    assert first.exit_code == 0, first.output
    assert f"schema at version {SCHEMA_VERSION} (applied migration(s) 1, 2)" in first.output
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
                applied.append(store._backend.migrated)  # type: ignore[attr-defined]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(applied) == [[]] * 5 + [[1, 2]]
    schema = url.split("schema=")[1].split("&", maxsplit=1)[0]
    rows = raw.execute(f"SELECT version FROM {schema}.schema_version").fetchall()
    assert rows == [(1,), (2,)]


def test_a_newer_schema_is_refused(postgres_url: str, raw: psycopg.Connection) -> None:
    schema = _schema()
    with open_store(f"{postgres_url}?schema={schema}&migrate=true"):
        pass
    raw.execute(f"INSERT INTO {schema}.schema_version (version) VALUES (99)")
    for migrate in ("false", "true"):
        try:
            open_store(f"{postgres_url}?schema={schema}&migrate={migrate}")
        except ConfigError as exc:
            assert "newer than this chatledger" in str(exc)
        else:
            raise AssertionError("a newer schema was accepted")


def test_a_database_from_before_users_is_migrated_and_keeps_working(
    postgres_url: str, raw: psycopg.Connection,
) -> None:
    """Schema 1 (no user column), with a session in it: migrate-schema adds the
    user index; the old session reads as before, untagged, and new ones are tagged."""
    from chatledger._backends._postgres_sql import MIGRATIONS
    from chatledger._codec import encode

    schema = _schema()
    raw.execute(f"CREATE SCHEMA {schema}; CREATE TABLE {schema}.schema_version ("
                " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
    raw.execute(MIGRATIONS[0].replace("{s}", schema))
    raw.execute(f"INSERT INTO {schema}.schema_version (version) VALUES (1)")
    raw.execute(f"INSERT INTO {schema}.sessions VALUES ('default', 'old', 1, 1, 1.0, 1.0, NULL,"
                " 'abc')")
    raw.execute(f"INSERT INTO {schema}.entries VALUES ('default', 'old', 1, %s)",
                (encode(user("from before")),))
    url = f"{postgres_url}?schema={schema}"
    try:
        open_store(url).close()
    except ConfigError as exc:
        assert "at version 1, this chatledger needs 2" in str(exc)
    result = CliRunner().invoke(main, ["migrate-schema", url])
    assert result.exit_code == 0 and "(applied migration(s) 2)" in result.output, result.output
    with open_store(url) as store:
        assert [m.text for m in store.session("old").read()] == ["from before"]
        store.session("new", user="ann").append([user("hi")])
        assert store.forget_user("ann").deleted == ("new",)
        assert sorted(store.sessions()) == ["old"]
