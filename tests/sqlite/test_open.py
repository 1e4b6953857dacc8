"""Opening a SQLite store: under another writer's lock, and on a file from before ledger ids."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from chatledger import BackendUnavailable, RetryPolicy, open_store, user
from chatledger._backends.contract import LEGACY_LEDGER


def test_opening_a_new_file_waits_for_a_writer_that_holds_it(tmp_path: Path) -> None:
    """SQLite skips its busy wait when switching to WAL: opening retries instead."""
    path = tmp_path / "new.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a new file, still in rollback-journal mode
    opened: list[object] = []
    opener = threading.Thread(target=lambda: opened.append(open_store(f"sqlite:///{path}")))
    opener.start()
    opener.join(timeout=0.5)  # it is waiting, not failing
    assert opener.is_alive() and not opened
    holder.execute("ROLLBACK")
    holder.close()
    opener.join(timeout=10)
    assert len(opened) == 1
    with opened[0] as store:  # type: ignore[attr-defined]
        assert store.session("s").append([user("hi")]).version == 1


def test_opening_under_a_lock_that_outlasts_the_budget_is_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "held.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(BackendUnavailable, match="locked"):
            open_store(f"sqlite:///{path}", timeout=0.05,
                       retry=RetryPolicy(attempts=3, backoff=0.01, deadline=0.5))
    finally:
        holder.close()


def test_a_file_from_before_ledger_ids_is_upgraded_and_its_sessions_kept(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with open_store(f"sqlite:///{path}") as store:
        store.session("s").append([user("from the old days")])
    with sqlite3.connect(path) as db:  # the 0.1.0 layout had no ledger column
        db.execute("ALTER TABLE sessions DROP COLUMN ledger")
    with open_store(f"sqlite:///{path}") as store:
        history = store.session("s").read(ledger=LEGACY_LEDGER)
        assert [m.text for m in history] == ["from the old days"]
        assert store.session("s").append([user("now")]).ledger == LEGACY_LEDGER
        store.session("s").delete()
        assert store.session("s").append([user("anew")]).ledger != LEGACY_LEDGER


def test_a_file_from_before_users_gets_the_user_index_and_keeps_its_sessions(
        tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with open_store(f"sqlite:///{path}") as store:
        store.session("s").append([user("from before users")])
    with sqlite3.connect(path) as db:  # the layout before erasure by user
        db.execute("DROP INDEX sessions_by_user")
        db.execute("ALTER TABLE sessions DROP COLUMN user_id")
    with open_store(f"sqlite:///{path}") as store:
        assert [m.text for m in store.session("s").read()] == ["from before users"]
        store.session("t", user="ann").append([user("tagged")])
        assert store.forget_user("ann").deleted == ("t",)
        assert list(store.sessions()) == ["s"]
    with sqlite3.connect(path) as db:
        indexes = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
    assert "sessions_by_user" in indexes
