"""``chatledger migrate --from-langgraph-store``: LangGraph store items into chatledger,
from real stores (a SqliteStore file, a PostgresStore on a private PostgreSQL, a
factory)."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore

from chatledger._cli import main
from chatledger.langgraph import LedgerStore
from tests.cli import _langgraph_sources


def _run(*args: str) -> Any:
    return CliRunner().invoke(main, ["migrate", *args])


def test_from_a_sqlite_store_dry_run_copy_verify_and_again(tmp_path: Path) -> None:
    with SqliteStore.from_conn_string(str(tmp_path / "lg.db")) as store:
        store.setup()
        store.put(("users", "u1"), "food", {"likes": "pizza"}, ttl=60.0)
        store.put(("users", "u2"), "food", {"likes": "tea"})
    source, target = f"sqlite:///{tmp_path}/lg.db", f"sqlite:///{tmp_path}/ledger.db"

    dry = _run("--from-langgraph-store", source, "--to", target, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "would copy 2 item(s)" in dry.output and "verified" not in dry.output
    first = _run("--from-langgraph-store", source, "--to", target)
    assert first.exit_code == 0, first.output
    assert "copied 2 item(s)" in first.output and "TTLs: read from SqliteStore's table" \
        in first.output
    assert "verified: every item of 2 namespaces the same on both sides" in first.output
    again = _run("--from-langgraph-store", source, "--to", target)
    assert "copied 0 item(s); 2 already in chatledger" in again.output
    with LedgerStore.from_url(target) as ledger:
        assert ledger.get(("users", "u1"), "food").value == {"likes": "pizza"}  # type: ignore[union-attr]


def test_from_a_postgres_store_by_its_url(request: pytest.FixtureRequest,
                                          tmp_path: Path) -> None:
    server = request.getfixturevalue("postgres_server")
    database = f"lgs_{secrets.token_hex(6)}"
    with psycopg.connect(server.url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    source = server.url.rsplit("/", 1)[0] + f"/{database}"
    with PostgresStore.from_conn_string(source) as store:
        store.setup()
        for i in range(3):
            store.put(("notes", f"n{i}"), "k", {"i": i})
    result = _run("--from-langgraph-store", source, "--to", f"sqlite:///{tmp_path}/ledger.db")
    assert result.exit_code == 0, result.output
    assert "3 namespace(s) found" in result.output and "copied 3 item(s)" in result.output


def test_from_a_factory_and_a_refused_item_exits_1(tmp_path: Path) -> None:
    # A set is no JSON value: LedgerStore refuses it (any size is stored, in parts).
    _langgraph_sources.WRITTEN_STORE.put(("a",), "tags", {"tags": {"x", "y"}})
    _langgraph_sources.WRITTEN_STORE.put(("a",), "small", {"text": "x"})
    factory = f"{_langgraph_sources.__name__}:written_store"
    target = f"sqlite:///{tmp_path}/ledger.db"
    result = _run("--from-langgraph-store", factory, "--to", target)
    assert result.exit_code == 1, result.output
    assert "copied 1 item(s)" in result.output and "1 item(s) not copied:" in result.output
    assert "  namespace ('a',) key 'tags': " in result.output
    assert "TTLs: InMemoryStore has none" in result.output


def test_a_source_it_cannot_read_is_named(tmp_path: Path) -> None:
    missing = _run("--from-langgraph-store", f"sqlite:///{tmp_path}/none.db",
                   "--to", f"sqlite:///{tmp_path}/ledger.db")
    assert missing.exit_code == 2 and "no SQLite database at" in missing.output
    unknown = _run("--from-langgraph-store", "redis://localhost:1/0")
    assert unknown.exit_code == 2 and "--from-langgraph-store takes postgresql://" \
        in unknown.output
    mixed = _run("--from-langgraph-store", "a:b", "--from-langgraph", "c:d")
    assert mixed.exit_code == 2 and "--from-langgraph-store SOURCE" in mixed.output


@pytest.mark.parametrize(("module", "source", "message"), [
    ("chatledger.langgraph", "a:b", "migrate needs chatledger.langgraph"),
    ("langgraph.store.sqlite", "sqlite:///x.db", "needs langgraph-checkpoint-sqlite"),
    ("langgraph.store.postgres", "postgresql://h/db", "needs langgraph-checkpoint-postgres"),
])
def test_a_missing_package_is_named_with_what_to_install(
        module: str, source: str, message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    result = _run("--from-langgraph-store", source, "--to", "memory://")
    assert result.exit_code == 2 and message in result.output, result.output
