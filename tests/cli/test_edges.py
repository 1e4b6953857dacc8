"""Edges of the command line that an adversarial review found: an --out that cannot be
written, a --deadline of NaN, a key given twice in an imported line, a migration source
that is some other SQLite file. Each is refused in one line with the exit code the
docs' table gives (2: the command could not run), and nothing is written."""

from __future__ import annotations

import secrets
import sqlite3
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from chatledger import open_store, user
from chatledger._cli import main
from chatledger.testing._postgres_server import PostgresServer


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output
    return result.exit_code, result.output


def _store(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/a.db"
    with open_store(url) as store:
        store.session("s").append([user("hello")])
    return url


def test_an_out_file_that_cannot_be_opened_is_a_usage_error(tmp_path: Path) -> None:
    url = _store(tmp_path)
    code, output = _run("export", "--url", url, "--out", str(tmp_path / "no/such/x.jsonl"))
    assert code == 2
    assert "Could not open file" in output and "No such file or directory" in output
    code, _ = _run("export", "gone", "--url", url, "--out", str(tmp_path / "x.jsonl"))
    assert code == 1 and not (tmp_path / "x.jsonl").exists()  # nothing written, no file
    code, _ = _run("export", "--url", url, "--out", str(tmp_path / "x.jsonl"))
    assert code == 0 and '"content":"hello"' in (tmp_path / "x.jsonl").read_text()


@pytest.mark.parametrize("seconds", ["nan", "NaN", "inf", "1e400", "-1", "3601"])
def test_a_deadline_that_is_no_positive_finite_number_is_refused(
        tmp_path: Path, seconds: str) -> None:
    url = _store(tmp_path)
    for args in (["--deadline", seconds, "sessions", "--url", url],
                 ["sessions", "--url", url, "--deadline", seconds]):
        code, output = _run(*args)
        assert code == 2 and "Invalid value for '--deadline'" in output
    assert _run("verify", "--duration", seconds)[0] == 2


LINE = ('{"session":"s","seq":1,"role":"user","content":"x","id":"m1",'
        '"created_at":"2026-01-01T00:00:00+00:00"%s}\n')


@pytest.mark.parametrize(("extra", "key"), [
    (',"metadata":{"a":1,"a":2}', "a"),  # nested
    (',"content":"y"', "content"),  # the record's own field
    (',"metadata":{"n":12345678901234567890,"n":1}', "n"),  # the exact parser's path
    (', "metadata": {"b": 1,  "b": 1}', "b"),  # not as orjson writes it, same values
])
def test_a_key_given_twice_is_refused_naming_the_line(
        tmp_path: Path, extra: str, key: str) -> None:
    url = f"sqlite:///{tmp_path}/in.db"
    source = tmp_path / "in.jsonl"
    source.write_text(LINE % "" + LINE.replace('"s"', '"t"') % extra)
    code, output = _run("import", str(source), "--url", url)
    assert code == 2
    assert f"line 2: the key {key!r} is given twice in one object; nothing imported" in output
    with open_store(url) as store:
        assert list(store.sessions()) == []


def test_a_line_laid_out_by_hand_without_twice_given_keys_imports(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/in.db"
    source = tmp_path / "in.jsonl"
    source.write_text(LINE % ', "metadata": { "a": 1, "b": {"a": 2} }')
    assert _run("import", str(source), "--url", url)[0] == 0
    with open_store(url) as store:
        assert store.session("s").read().messages[0].metadata == {"a": 1, "b": {"a": 2}}


@pytest.mark.parametrize(("option", "holds", "table"), [
    ("--from-langgraph", "LangGraph checkpoints", "checkpoints"),
    ("--from-langgraph-store", "LangGraph store items", "store"),
])
def test_a_migration_source_without_langgraphs_tables_is_named_and_left_alone(
        tmp_path: Path, option: str, holds: str, table: str) -> None:
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (x)")
    target = f"sqlite:///{tmp_path}/to.db"
    for extra in ([], ["--thread-id", "t"] if option == "--from-langgraph" else []):
        code, output = _run("migrate", option, f"sqlite:///{other}", "--to", target, *extra)
        assert code == 2
        assert f"{other} holds no {holds}: it has no {table!r} table" in output
    with sqlite3.connect(other) as db:  # no table of LangGraph's was made in it
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == [("notes",)]
    (tmp_path / "junk.db").write_bytes(b"junk" * 1000)
    code, output = _run("migrate", option, f"sqlite:///{tmp_path}/junk.db", "--to", target)
    assert code == 2 and "DatabaseError: file is not a database" in output


@pytest.mark.parametrize(("option", "holds", "table"), [
    ("--from-langgraph", "LangGraph checkpoints", "checkpoints"),
    ("--from-langgraph-store", "LangGraph store items", "store"),
])
def test_a_postgres_migration_source_without_langgraphs_tables_is_named(
        postgres_server: PostgresServer, tmp_path: Path, option: str, holds: str,
        table: str) -> None:
    database = f"other_{secrets.token_hex(6)}"
    with psycopg.connect(postgres_server.url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    source = postgres_server.url.rsplit("/", 1)[0] + f"/{database}"
    with psycopg.connect(source, autocommit=True) as db:
        db.execute("CREATE TABLE notes (x int)")
    target = f"sqlite:///{tmp_path}/to.db"
    for extra in ([], ["--thread-id", "t"] if option == "--from-langgraph" else []):
        code, output = _run("migrate", option, source, "--to", target, *extra)
        assert code == 2, output
        assert f"holds no {holds}: it has no {table!r} table" in output, output
        assert "UndefinedTable" not in output
    with psycopg.connect(source, autocommit=True) as db:  # nothing of LangGraph's was made
        assert db.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                          ).fetchall() == [("notes",)]
