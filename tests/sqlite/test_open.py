"""Opening a SQLite store: under another writer's lock, and its schema version."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from chatledger import (
    BackendUnavailable,
    ConfigError,
    RetryPolicy,
    open_async_store,
    open_store,
    user,
)
from chatledger._backends.migrations import Migrations
from chatledger._backends.sqlite.schema import SCHEMA, ensure_schema


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


def test_a_new_file_is_at_the_current_schema_version(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    with open_store(f"sqlite:///{path}") as store:
        store.session("s").append([user("hi")])
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA.current,)
    with open_store(f"sqlite:///{path}") as store:  # opened again: nothing to do
        assert [m.text for m in store.session("s").read()] == ["hi"]


def test_a_file_newer_than_this_chatledger_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    open_store(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA.current + 1}")
    with pytest.raises(ConfigError, match=f"{path}: the chatledger schema is at version "
                                          f"{SCHEMA.current + 1}, newer than this"):
        open_store(f"sqlite:///{path}")
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA.current + 1,)


def test_a_file_of_another_program_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE sessions (id INTEGER PRIMARY KEY)")
    with pytest.raises(ConfigError, match="a table named as chatledger's but no chatledger "
                                          "schema version"):
        open_store(f"sqlite:///{path}")
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == [("sessions",)]


def test_a_file_shared_with_another_programs_tables_gets_chatledgers_beside_them(
        tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE checkpoints (id INTEGER PRIMARY KEY)")
    with open_store(f"sqlite:///{path}") as store:
        assert store.session("s").append([user("hi")]).version == 1
    with sqlite3.connect(path) as db:
        names = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
    assert {"checkpoints", "sessions", "entries", "message_ids"} <= names


def test_the_steps_apply_in_order_each_once_and_a_failed_one_rolls_back_whole(
        tmp_path: Path) -> None:
    """The mechanism, with a test-only list: step 3 needs step 2's table."""
    steps = Migrations([*SCHEMA.steps, ("CREATE TABLE extra (n INTEGER)",),
                        ("INSERT INTO extra VALUES (3)", "UPDATE extra SET n = n * 2")])
    failing = Migrations([*steps.steps, ("INSERT INTO missing VALUES (4)",)])
    db = sqlite3.connect(tmp_path / "steps.db", isolation_level=None)
    try:
        ensure_schema(db, "steps.db", Migrations(SCHEMA.steps))
        with pytest.raises(sqlite3.OperationalError, match="no such table: missing"):
            ensure_schema(db, "steps.db", failing)
        assert db.execute("PRAGMA user_version").fetchone() == (1,)
        assert "extra" not in {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
        ensure_schema(db, "steps.db", steps)
        ensure_schema(db, "steps.db", steps)  # at its version: nothing applied again
        assert db.execute("SELECT n FROM extra").fetchall() == [(6,)]
        assert db.execute("PRAGMA user_version").fetchone() == (3,)
        with pytest.raises(ConfigError, match="at version 3, newer than this chatledger's 1"):
            ensure_schema(db, "steps.db")
    finally:
        db.close()


# -- create=false: a store that must already be there ----------------------------


def test_create_false_refuses_a_missing_file_and_makes_nothing(tmp_path: Path) -> None:
    """A volume not mounted, or a mistyped path: loud at open, sync and async, never a
    new empty store that would greet every user as new."""
    path = tmp_path / "volume" / "chat.db"
    url = f"sqlite:///{path}?create=false"
    refused = r"no database file at .*chat\.db.*create=false \(a volume not mounted"
    with pytest.raises(ConfigError, match=refused):
        open_store(url, retry=RetryPolicy.none())
    with pytest.raises(ConfigError, match=refused):
        asyncio.run(open_async_store(url, retry=RetryPolicy.none()))
    assert not path.exists() and not path.parent.exists()


def test_create_false_opens_the_store_that_is_there(tmp_path: Path) -> None:
    path = tmp_path / "a name with spaces.db"  # quoted in the URI that will not create it
    with open_store(f"sqlite:///{path}") as store:
        store.session("s").append([user("kept")])
    with open_store(f"sqlite:///{path}", create=False) as store:
        assert [m.text for m in store.session("s").read()] == ["kept"]
        assert store.session("s").append([user("more")]).version == 2

    async def scenario() -> list[str]:
        async with await open_async_store(f"sqlite:///{path}?create=false") as store:
            await store.session("s").append([user("async")])
            return [m.text for m in await store.session("s").read()]

    assert asyncio.run(scenario()) == ["kept", "more", "async"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".db") == [path.name]


def test_create_false_refuses_a_file_without_a_store_and_leaves_it(tmp_path: Path) -> None:
    empty, other = tmp_path / "empty.db", tmp_path / "other.db"
    empty.touch()
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
    for path in (empty, other):
        before = path.read_bytes()
        with pytest.raises(ConfigError, match="holds no chatledger store, and create=false"):
            open_store(f"sqlite:///{path}?create=false", retry=RetryPolicy.none())
        assert path.read_bytes() == before


def test_create_false_connects_to_a_file_removed_after_open_without_making_it(
        tmp_path: Path) -> None:
    """Each of the store's connections (more are made as calls overlap) opens the file
    read-write or fails: one deleted under a running store is not made again, empty."""
    path = tmp_path / "chat.db"
    open_store(f"sqlite:///{path}").close()
    with open_store(f"sqlite:///{path}?create=false", retry=RetryPolicy.none()) as store:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        with pytest.raises(sqlite3.OperationalError, match="unable to open"):
            store._backend._connect()
    assert not path.exists()


def test_create_is_a_boolean(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="create='maybe' is not a boolean"):
        open_store(f"sqlite:///{tmp_path}/x.db?create=maybe")
    with open_store(f"sqlite:///{tmp_path}/new/x.db?create=true") as store:  # the default
        assert store.session("s").append([user("hi")]).version == 1
