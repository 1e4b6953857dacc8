"""A store's writers on SQLite take turns on one connection and share commits:
what one writer's failure, a failed commit and closing do to the others."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chatledger import BackendError
from chatledger._backends.sqlite.writes import GroupCommit


@pytest.fixture
def path(tmp_path: Path) -> Path:
    path = tmp_path / "writes.db"
    with sqlite3.connect(path, isolation_level=None) as db:
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        db.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, parent INTEGER"
                   " REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)")
    return path


@pytest.fixture
def writes(path: Path) -> Iterator[GroupCommit]:
    def connect() -> sqlite3.Connection:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA foreign_keys = ON")  # checked at COMMIT: a commit that fails
        return db

    writes = GroupCommit(connect, "sqlite:///writes.db", timeout=10)
    yield writes
    writes.close()


def _rows(path: Path) -> list[int]:
    with sqlite3.connect(path) as db:
        return [row for (row,) in db.execute("SELECT id FROM rows ORDER BY id")]


def _write(writes: GroupCommit, row: int, then: Callable[[sqlite3.Connection], None],
           outcome: list[object]) -> None:
    try:
        with writes.turn() as db:
            db.execute("INSERT INTO rows (id) VALUES (?)", (row,))
            then(db)
        outcome.append("acknowledged")
    except Exception as exc:  # the outcome is what the test checks
        outcome.append(exc)


def _grouped(writes: GroupCommit, second: Callable[[sqlite3.Connection], None],
             first: Callable[[sqlite3.Connection], None] = lambda db: None,
             ) -> tuple[list[object], list[object]]:
    """Row 1 written, then row 2 by a writer that waited for the first's turn:
    both in one transaction. The outcome of each."""
    firsts: list[object] = []
    seconds: list[object] = []
    waiting = threading.Event()
    later = threading.Thread(target=_write, args=(writes, 2, second, seconds))

    def start_the_second(db: sqlite3.Connection) -> None:
        later.start()
        while writes.waits == 0 and later.is_alive():  # it waits for its turn
            waiting.wait(0.001)
        first(db)

    _write(writes, 1, start_the_second, firsts)
    later.join()
    return firsts, seconds


def test_writers_that_wait_for_each_other_share_one_commit(
        writes: GroupCommit, path: Path) -> None:
    firsts, seconds = _grouped(writes, lambda db: None)

    assert firsts == seconds == ["acknowledged"]
    assert writes.commits == 1
    assert _rows(path) == [1, 2]


def test_a_writer_that_fails_is_undone_alone(writes: GroupCommit, path: Path) -> None:
    def fail(db: sqlite3.Connection) -> None:
        raise ValueError("the append's own check refused it")

    firsts, seconds = _grouped(writes, fail)

    assert firsts == ["acknowledged"]
    assert isinstance(seconds[0], ValueError)
    assert _rows(path) == [1]


def _roll_back(db: sqlite3.Connection) -> None:
    db.execute("ROLLBACK")


def _roll_back_and_fail(db: sqlite3.Connection) -> None:
    db.execute("ROLLBACK")
    raise ValueError("gone")


@pytest.mark.parametrize(("end", "seen"), [
    (_roll_back, "no such savepoint: writer"),  # what the second writer then met
    (_roll_back_and_fail, "the transaction holding this write failed: gone"),
])
def test_a_group_that_sqlite_ended_fails_every_writer_in_it(
        writes: GroupCommit, path: Path, end: Callable[[sqlite3.Connection], None],
        seen: str) -> None:
    firsts, seconds = _grouped(writes, end)

    assert isinstance(firsts[0], sqlite3.OperationalError)
    assert str(firsts[0]) == seen
    assert isinstance(seconds[0], Exception)
    assert _rows(path) == []
    assert _grouped(writes, lambda db: None) == (["acknowledged"], ["acknowledged"])


def test_a_commit_that_fails_fails_every_writer_and_keeps_nothing(
        writes: GroupCommit, path: Path) -> None:
    def orphan(db: sqlite3.Connection) -> None:
        db.execute("INSERT INTO rows (id, parent) VALUES (3, 99)")  # no parent 99

    firsts, seconds = _grouped(writes, orphan)

    assert [type(o) for o in firsts + seconds] == [sqlite3.IntegrityError] * 2
    assert "FOREIGN KEY" in str(firsts[0])
    assert _rows(path) == []
    assert writes.commits == 0


def test_a_group_left_without_a_next_writer_is_committed_by_its_last(
        writes: GroupCommit, path: Path) -> None:
    """The writer a group was left open for gave up waiting for its turn."""
    db, group = writes._begin()
    db.execute("INSERT INTO rows (id) VALUES (5)")
    writes._turn.release()  # left open, as for a next writer that never comes

    writes._wait(group)

    assert writes.commits == 1
    assert _rows(path) == [5]


def test_closing_commits_the_open_group_and_refuses_later_writers(
        writes: GroupCommit, path: Path) -> None:
    db, group = writes._begin()
    db.execute("INSERT INTO rows (id) VALUES (6)")
    writes._turn.release()

    writes.close()

    group.check()  # committed: nothing to raise
    assert _rows(path) == [6]
    with pytest.raises(BackendError, match="closed"), writes.turn():
        pass


class _NoSavepoints(sqlite3.Connection):
    """A connection on which a writer's savepoint fails."""

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
        if sql == "SAVEPOINT writer":
            raise sqlite3.OperationalError("no savepoint here")
        return super().execute(sql, *args)


def test_a_writer_whose_savepoint_fails_fails_alone(path: Path) -> None:
    writes = GroupCommit(lambda: sqlite3.connect(path, isolation_level=None,
                                                 check_same_thread=False, factory=_NoSavepoints),
                         "sqlite:///writes.db", timeout=10)
    try:
        firsts, seconds = _grouped(writes, lambda db: None)
    finally:
        writes.close()

    assert firsts == ["acknowledged"]
    assert [str(o) for o in seconds] == ["no savepoint here"]
    assert _rows(path) == [1]


# -- reads on the write connection ------------------------------------------------


def test_an_idle_write_connection_is_lent_to_one_read_at_a_time(writes: GroupCommit) -> None:
    assert writes.lend_idle() is None  # no write yet: no connection to lend
    with writes.turn() as db:
        db.execute("INSERT INTO rows (id) VALUES (1)")
    lent = writes.lend_idle()
    assert lent is not None and not lent.in_transaction
    assert lent.execute("SELECT id FROM rows").fetchall() == [(1,)]
    assert writes.lend_idle() is None  # a second read at once reads elsewhere
    writes.end_read()
    again = writes.lend_idle()
    assert again is lent
    writes.end_read()


def test_a_writer_that_comes_during_a_read_waits_for_that_read(path: Path,
                                                               writes: GroupCommit) -> None:
    with writes.turn() as db:
        db.execute("INSERT INTO rows (id) VALUES (1)")
    lent = writes.lend_idle()
    assert lent is not None
    outcome: list[object] = []
    writer = threading.Thread(target=_write, args=(writes, 2, lambda db: None, outcome))
    writer.start()
    while writes.waits == 0 and writer.is_alive():  # it waits for the read's turn
        threading.Event().wait(0.001)
    assert outcome == [] and _rows(path) == [1]
    writes.end_read()
    writer.join()
    assert outcome == ["acknowledged"] and _rows(path) == [1, 2]


def test_no_read_is_lent_a_group_left_open_or_a_connection_writers_wait_for(
        writes: GroupCommit) -> None:
    """A read never sees another writer's uncommitted rows, and never holds up a
    writer already waiting."""
    with writes.turn() as db:
        db.execute("INSERT INTO rows (id) VALUES (1)")
    with writes._count:
        writes._waiting += 1  # a writer waiting for its turn
    try:
        assert writes.lend_idle() is None
    finally:
        with writes._count:
            writes._waiting -= 1
    writes._turn.acquire()
    writes._group = object()  # type: ignore[assignment]  # a group left open: turn given back
    writes._turn.release()
    try:
        assert writes.lend_idle() is None
        assert writes._turn.acquire(blocking=False)  # the refusal gave the turn back
        writes._turn.release()
    finally:
        writes._group = None


def test_a_write_connection_left_in_a_transaction_is_never_lent(writes: GroupCommit) -> None:
    """A group whose COMMIT and ROLLBACK both failed leaves its rows in an open
    transaction and no group: a read there would see rows that never committed."""
    with writes.turn() as db:
        db.execute("INSERT INTO rows (id) VALUES (1)")
    assert writes._db is not None
    writes._db.execute("BEGIN")
    writes._db.execute("INSERT INTO rows (id) VALUES (2)")
    assert writes.lend_idle() is None
    assert writes._turn.acquire(blocking=False)  # the refusal gave the turn back
    writes._turn.release()
    writes._db.execute("ROLLBACK")


def test_a_closed_write_connection_is_never_lent(writes: GroupCommit) -> None:
    with writes.turn() as db:
        db.execute("INSERT INTO rows (id) VALUES (1)")
    writes.close()
    assert writes.lend_idle() is None
