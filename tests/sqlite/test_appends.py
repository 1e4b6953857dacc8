"""The common SQLite append in four statements (``sqlite/appends.py``): how many it
sends, and what an id already stored does to it inside a group of writers."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from chatledger import InvalidMessage, RetryPolicy, Store, assistant, open_store, user
from chatledger._backends.sqlite.appends import MOST
from tests.conftest import FakeClock


def _traced(store: Store) -> list[str]:
    """Every statement the store's connections run from now on, in order."""
    statements: list[str] = []
    for db in store._backend._connections.connections():  # type: ignore[attr-defined]
        db.set_trace_callback(statements.append)
    return statements


def _kinds(statements: list[str]) -> list[str]:
    """Each statement's first words: what it does and to which table."""
    return [" ".join(statement.split()[:3]) for statement in statements]


def test_a_plain_append_is_four_statements_between_begin_and_commit(tmp_path: Path) -> None:
    """A count, not a time: a statement more per append is a regression to catch here."""
    with open_store(f"sqlite:///{tmp_path}/ledger.db") as store:
        session = store.session("s")
        session.append([user("hello")])
        statements = _traced(store)

        ack = session.append([user("where is my order?"), assistant("it shipped")])

        assert (ack.first_seq, ack.last_seq, ack.deduplicated) == (2, 3, False)
        assert _kinds(statements) == [
            "BEGIN IMMEDIATE", "SELECT version, ledger", "INSERT INTO message_ids",
            "INSERT INTO entries", "UPDATE sessions SET", "COMMIT"]


def test_an_append_that_names_its_ledger_user_and_version_takes_the_four_too(
        tmp_path: Path) -> None:
    clock = FakeClock()
    with open_store(f"sqlite:///{tmp_path}/ledger.db", ttl=3600, clock=clock) as store:
        session = store.session("s", user="u")
        first = session.append([user("hello")])
        clock.advance(60)
        statements = _traced(store)

        ack = session.append([assistant("hi")], expect_version=1, ledger=first.ledger)

        assert (ack.first_seq, ack.last_seq, ack.ledger) == (2, 2, first.ledger)
        assert len(statements) == 6
        assert " AND ledger = " in statements[1] and " AND user_id = " in statements[1]
        info = session.info()
        assert info is not None and info.user == "u"
        assert info.expires_at is not None
        assert info.expires_at.timestamp() == clock.now + 3600  # the TTL, from this append


@pytest.mark.parametrize("count", [1, MOST])
def test_a_batch_of_up_to_most_messages_is_one_insert_per_table(
        tmp_path: Path, count: int) -> None:
    with open_store(f"sqlite:///{tmp_path}/ledger.db") as store:
        session = store.session("s")
        session.append([user("hello")])
        statements = _traced(store)

        ack = session.append([user(str(i)) for i in range(count)])

        assert (ack.first_seq, ack.last_seq) == (2, 1 + count)
        assert len(statements) == 6
        assert [m.text for m in session.read()] == ["hello", *map(str, range(count))]


def test_a_longer_batch_takes_the_steps(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path}/ledger.db") as store:
        session = store.session("s")
        session.append([user("hello")])
        statements = _traced(store)

        session.append([user(str(i)) for i in range(MOST + 1)])

        assert _kinds(statements)[1] == "SELECT version, first_seq,"  # the state, read
        assert session.read().version == MOST + 2


def test_a_retry_reads_what_is_stored_and_writes_nothing(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path}/ledger.db") as store:
        session = store.session("s")
        batch = [user("where is my order?"), assistant("it shipped")]
        first = session.append(batch)
        statements = _traced(store)

        again = session.append(batch)

        assert (again.first_seq, again.last_seq, again.deduplicated) == (1, 2, True)
        assert again.ledger == first.ledger
        assert not any(s.startswith(("UPDATE", "INSERT INTO entries")) for s in statements)
        assert session.read().version == 2


def _retry_while_held(store: Store, batch: list[object]) -> list[object]:
    """Append ``batch`` from a second thread while this one holds the write
    transaction with a write of its own: the append joins the group, in a
    savepoint. Its outcome."""
    backend = store._backend  # type: ignore[attr-defined]
    pool = backend._connections
    outcome: list[object] = []

    def append() -> None:
        try:
            outcome.append(store.session("s").append(batch))  # type: ignore[arg-type]
        except Exception as exc:  # the outcome is what the test checks
            outcome.append(exc)

    second = threading.Thread(target=append)
    with backend._transaction(write=True) as tx:
        tx.execute("UPDATE sessions SET updated_at = 7")
        second.start()
        while pool.writer_waits == 0 and second.is_alive():  # it waits for its turn
            threading.Event().wait(0.001)
    second.join()
    return outcome


def test_a_retry_in_a_group_is_deduplicated_and_keeps_the_groups_writes(
        tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path}/ledger.db", timeout=10,
                    retry=RetryPolicy.none()) as store:
        batch = [user("where is my order?"), assistant("it shipped")]
        first = store.session("s").append(batch)
        commits = store._backend._connections._writes.commits  # type: ignore[attr-defined]

        outcome = _retry_while_held(store, batch)

        assert [(a.first_seq, a.last_seq, a.deduplicated, a.ledger)  # type: ignore[attr-defined]
                for a in outcome] == [(1, 2, True, first.ledger)]
        assert store._backend._connections._writes.commits == commits + 1  # type: ignore[attr-defined]
        info = store.session("s").info()
        assert info is not None and (info.version, info.updated_at.timestamp()) == (2, 7)


def test_part_of_a_stored_batch_in_a_group_is_refused_and_keeps_the_groups_writes(
        tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path}/ledger.db", timeout=10,
                    retry=RetryPolicy.none()) as store:
        batch = [user("where is my order?"), assistant("it shipped")]
        store.session("s").append(batch)

        outcome = _retry_while_held(store, [user("new"), batch[1]])

        assert [type(o) for o in outcome] == [InvalidMessage]
        info = store.session("s").info()
        assert info is not None and (info.version, info.updated_at.timestamp()) == (2, 7)
        with sqlite3.connect(tmp_path / "ledger.db") as db:
            assert db.execute("SELECT count(*) FROM message_ids").fetchone() == (2,)
            assert db.execute("SELECT count(*) FROM entries").fetchone() == (2,)
