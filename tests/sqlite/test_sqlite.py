"""What only the SQLite backend does: files, locks, sweeping, its failures."""

from __future__ import annotations

import asyncio
import gc
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from chatledger import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    RetryPolicy,
    Store,
    open_async_store,
    open_store,
    user,
)
from chatledger._backends.sqlite.connections import MAX_IDLE
from tests.conftest import FakeClock


def test_the_file_uses_wal_and_the_indexes_serve_windows(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/sub/dir/ledger.db"  # missing folders are made
    with open_store(url) as store:
        store.session("s").append([user(str(i)) for i in range(50)])
    with sqlite3.connect(tmp_path / "sub/dir/ledger.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        plan = db.execute(
            "EXPLAIN QUERY PLAN SELECT seq, body FROM entries WHERE ns = ? AND sid = ?"
            " AND seq >= ? ORDER BY seq LIMIT ?", ("default", "s", 40, 20)).fetchall()
    detail = " ".join(row[-1] for row in plan)
    assert "SEARCH entries USING PRIMARY KEY (ns=? AND sid=? AND seq>?)" in detail
    assert "SCAN" not in detail


def test_a_held_write_lock_is_unavailable_then_retried(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    blocker = sqlite3.connect(tmp_path / "ledger.db", isolation_level=None, check_same_thread=False)
    with open_store(url, timeout=0.05, retry=RetryPolicy.none()) as store:
        store.session("s").append([user("first")])
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(BackendUnavailable, match="locked") as caught:
            store.session("s").append([user("blocked")])
        assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    release = threading.Timer(0.3, lambda: blocker.execute("ROLLBACK"))
    patient = RetryPolicy(attempts=50, backoff=0.05, max_backoff=0.1, deadline=10)
    with open_store(url, timeout=0.05, retry=patient) as store:
        release.start()
        ack = store.session("s").append([user("eventually")])
        release.join()
        assert ack.first_seq == 2
        assert [m.text for m in store.session("s").read()] == ["first", "eventually"]
    blocker.close()


def test_the_retry_budget_ends_in_backend_unavailable(tmp_path: Path) -> None:
    blocker = sqlite3.connect(tmp_path / "ledger.db", isolation_level=None, check_same_thread=False)
    url = f"sqlite:///{tmp_path}/ledger.db"
    with open_store(url, timeout=0.01,
                    retry=RetryPolicy(attempts=3, backoff=0.01, deadline=5)) as store:
        blocker.execute("BEGIN IMMEDIATE")
        with pytest.raises(BackendUnavailable):
            store.session("s").append([user("never")])
        with pytest.raises(BackendUnavailable):  # the deadline ends retries too
            open_store(url, timeout=0.2, retry=RetryPolicy(
                attempts=100, backoff=1, max_backoff=1, deadline=0.3)).session("s").delete()
    blocker.execute("ROLLBACK")
    blocker.close()


def test_async_retries_a_held_lock(tmp_path: Path) -> None:
    blocker = sqlite3.connect(tmp_path / "ledger.db", isolation_level=None, check_same_thread=False)
    open_store(f"sqlite:///{tmp_path}/ledger.db").close()  # create the schema first
    blocker.execute("BEGIN IMMEDIATE")
    threading.Timer(0.3, lambda: blocker.execute("ROLLBACK")).start()

    async def main() -> int:
        async with await open_async_store(
            f"sqlite:///{tmp_path}/ledger.db", timeout=0.05,
            retry=RetryPolicy(attempts=50, backoff=0.05, max_backoff=0.1),
        ) as store:
            return (await store.session("s").append([user("x")])).version

    assert asyncio.run(main()) == 1
    blocker.close()


def test_a_file_that_is_not_a_database_is_a_backend_error(tmp_path: Path) -> None:
    (tmp_path / "junk.db").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(BackendError, match="not a database") as caught:
        open_store(f"sqlite:///{tmp_path}/junk.db")
    assert not isinstance(caught.value, BackendUnavailable)


def test_a_closed_store_refuses_new_threads(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/ledger.db")
    store.close()
    errors: list[BaseException] = []

    def use() -> None:
        try:
            store.session("s").read()
        except BaseException as exc:  # handed to the test thread
            errors.append(exc)

    worker = threading.Thread(target=use)
    worker.start()
    worker.join()
    assert isinstance(errors[0], BackendError) and "is closed" in str(errors[0])


def test_expired_sessions_are_swept_from_the_file(tmp_path: Path) -> None:
    clock = FakeClock()
    url = f"sqlite:///{tmp_path}/ledger.db"
    with open_store(url, ttl=10, clock=clock) as store:
        for i in range(5):
            store.session(f"s{i}").append([user("x")])
        clock.advance(11)
        store.session("fresh").append([user("y")])
        assert store._backend.sweep_expired() == 5  # type: ignore[attr-defined]
        for _ in range(256):  # and the periodic sweep runs on its own
            store.session("fresh").append([user("z")])
    with sqlite3.connect(tmp_path / "ledger.db") as db:
        assert db.execute("SELECT count(DISTINCT sid) FROM entries").fetchone()[0] == 1
        assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1


def test_synchronous_normal_is_an_option(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path}/l.db?synchronous=normal") as store:
        assert store.session("s").append([user("x")]).version == 1
        db = store._backend._connections.get()  # type: ignore[attr-defined]
        assert db.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL


def test_big_batches_check_ids_in_chunks(tmp_path: Path) -> None:
    batch = [user(str(i)) for i in range(1200)]
    with open_store(f"sqlite:///{tmp_path}/l.db") as store:
        store.session("s").append(batch)
        assert store.session("s").append(batch).deduplicated
        assert store.session("s").read().version == 1200


def test_async_gives_up_after_the_retry_budget(tmp_path: Path) -> None:
    open_store(f"sqlite:///{tmp_path}/ledger.db").close()
    blocker = sqlite3.connect(tmp_path / "ledger.db", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")

    async def main() -> None:
        async with await open_async_store(
            f"sqlite:///{tmp_path}/ledger.db", timeout=0.01,
            retry=RetryPolicy(attempts=3, backoff=0.01),
        ) as store:
            await store.session("s").append([user("x")])

    with pytest.raises(BackendUnavailable, match="locked"):
        asyncio.run(main())
    blocker.execute("ROLLBACK")
    blocker.close()


def _append_in_child(store: Store, text: str, inherited: list[sqlite3.Connection]) -> None:
    store.session("s").append([user(text)])
    backend: Any = store._backend
    # SQLite forbids a connection crossing a fork: the child must have made its own,
    assert len(backend._connections) == 1
    assert not set(inherited) & set(backend._connections.connections())
    # and must not have closed its copies of the parent's either (that can
    # checkpoint or unlink the parent's WAL). A closed one raises here.
    for db in inherited:
        assert db.in_transaction is False


def test_a_store_opened_before_a_fork_works_in_the_child(tmp_path: Path) -> None:
    """gunicorn --preload and prefork workers open the store, then fork."""
    with open_store(f"sqlite:///{tmp_path}/ledger.db") as store:
        store.session("s").append([user("parent, before")])
        # A second thread holding a connection borrowed across the fork.
        ready, done = threading.Event(), threading.Event()

        def keep_a_connection() -> None:
            with store._backend._connections.use():  # type: ignore[attr-defined]
                ready.set()
                done.wait(30)

        helper = threading.Thread(target=keep_a_connection)
        helper.start()
        ready.wait(30)
        with store._backend._connections.use():  # type: ignore[attr-defined]
            pass  # a second connection, idle in the pool at the fork
        inherited = store._backend._connections.connections()  # type: ignore[attr-defined]
        assert len(inherited) == 3  # and the write connection
        child = multiprocessing.get_context("fork").Process(
            target=_append_in_child, args=(store, "child", inherited))
        child.start()
        child.join(30)
        done.set()
        helper.join()
        assert child.exitcode == 0
        store.session("s").append([user("parent, after")])
        assert [m.text for m in store.session("s").read()] == [
            "parent, before", "child", "parent, after"]


def test_threads_reuse_pooled_connections(tmp_path: Path) -> None:
    """Thread-per-request servers must not pile up open files, nor open one each."""
    with open_store(f"sqlite:///{tmp_path}/ledger.db") as store:
        store.session("s").append([user("main")])
        files_before = len(os.listdir("/proc/self/fd"))
        for index in range(200):
            worker = threading.Thread(target=store.session("s").append, args=([user(str(index))],))
            worker.start()
            worker.join()
        gc.collect()
        assert len(store._backend._connections) == 2  # type: ignore[attr-defined] # read, write
        assert len(os.listdir("/proc/self/fd")) <= files_before + 4
        assert store.session("s").read().version == 201


def test_a_burst_of_threads_keeps_at_most_max_idle_connections(tmp_path: Path) -> None:
    """Each borrower gets a connection of its own; the extra ones close as they return."""
    with open_store(f"sqlite:///{tmp_path}/ledger.db") as store:
        pool = store._backend._connections  # type: ignore[attr-defined]
        count = MAX_IDLE + 4
        barrier = threading.Barrier(count)
        lent: list[sqlite3.Connection] = []

        def hold_one() -> None:
            with pool.use() as db:
                lent.append(db)
                barrier.wait(30)  # every thread holds one at once

        workers = [threading.Thread(target=hold_one) for _ in range(count)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        assert len({id(db) for db in lent}) == count
        gc.collect()
        assert len(pool) == MAX_IDLE
        store.session("s").append([user("after the burst")])
        assert len(pool) == MAX_IDLE + 1  # and the write connection


def test_a_closed_pool_refuses_to_lend(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path}/ledger.db")
    store.session("s").append([user("x")])
    pool = store._backend._connections  # type: ignore[attr-defined]
    store.close()
    assert len(pool) == 0
    with pytest.raises(BackendError, match="closed"), pool.use():
        pass


def test_a_full_disk_is_unavailable_and_leaves_no_transaction_open(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path}/ledger.db", retry=RetryPolicy.none()) as store:
        store.session("s").append([user("small")])
        with store._backend._connections.use(write=True) as db:  # type: ignore[attr-defined]
            pages = db.execute("PRAGMA page_count").fetchone()[0]
            db.execute(f"PRAGMA max_page_count = {pages + 2}")
        with pytest.raises(BackendUnavailable, match="full") as caught:
            store.session("s").append([user("y" * 200_000)])
        assert "cannot rollback" not in str(caught.value)
        assert not db.in_transaction
        db.execute("PRAGMA max_page_count = 1073741823")
        assert store.session("s").append([user("fits now")]).version == 2


def test_a_failed_sweep_never_fails_the_append_it_follows(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    with open_store(f"sqlite:///{tmp_path}/ledger.db", retry=RetryPolicy.none()) as store:
        backend: Any = store._backend

        def busy() -> int:
            raise BackendUnavailable("the sweep found the file locked")

        monkeypatch.setattr(backend, "sweep_expired", busy)
        acks = [store.session("s").append([user(str(i))]) for i in range(300)]
        assert not any(ack.deduplicated for ack in acks)
        assert store.session("s").read().version == 300


def test_closing_a_store_in_use_waits_for_its_statements(tmp_path: Path) -> None:
    script = Path(__file__).with_name("close_while_busy.py")
    result = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]  # -11: the interpreter crashed
    assert result.stdout.strip() == "closed cleanly"


def test_a_directory_is_no_database(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="names a directory"):
        open_store(f"sqlite:///{tmp_path}")


def test_data_is_stored_as_raw_bytes_in_the_entry_blob(tmp_path: Path) -> None:
    payload = bytes(range(256)) * 8
    with open_store(f"sqlite:///{tmp_path}/d.db") as store:
        store.session("s").append([user("a file", data=payload), user("plain")])
    with sqlite3.connect(tmp_path / "d.db") as db:
        rows = db.execute("SELECT body, typeof(body) FROM entries ORDER BY seq").fetchall()
    (with_data, kind), (plain, _) = rows
    assert kind == "blob" and with_data[:1] == b"\x02" and with_data.endswith(payload)
    assert len(with_data) < len(payload) + 200  # no base64, no escaping: its own size
    assert plain[:1] == b"\x01"


def _second_writer(store: Store, outcome: list[object]) -> threading.Thread:
    """A thread appending to ``s``, its Ack or error put in ``outcome``."""
    def append() -> None:
        try:
            outcome.append(store.session("s").append([user("second")]))
        except BackendUnavailable as exc:
            outcome.append(exc)

    return threading.Thread(target=append)


def test_a_stores_writers_take_turns_and_share_one_commit(tmp_path: Path) -> None:
    """LangGraph's put and put_writes on two threads: the second waits for the
    first in the process, never in SQLite's busy handler (which sleeps 1 ms and
    more), and the first leaves its transaction open for it: one commit for both."""
    with open_store(f"sqlite:///{tmp_path}/ledger.db", timeout=10,
                    retry=RetryPolicy.none()) as store:
        store.session("s").append([user("first")])
        backend = store._backend  # type: ignore[attr-defined]
        pool, writes = backend._connections, backend._connections._writes
        for db in pool.connections():  # a writer that met the file locked would fail at once
            db.execute("PRAGMA busy_timeout = 0")
        commits = writes.commits
        outcome: list[object] = []
        second = _second_writer(store, outcome)
        with backend._transaction(write=True) as tx:
            tx.execute("UPDATE sessions SET updated_at = 7")
            second.start()
            while pool.writer_waits == 0 and second.is_alive():  # it waits for its turn
                threading.Event().wait(0.001)
            assert outcome == [] and pool.writer_waits == 1
        second.join()
        assert [type(o).__name__ for o in outcome] == ["Ack"]
        assert writes.commits == commits + 1
        assert store.session("s").info().updated_at != 7  # type: ignore[union-attr]
        assert [m.text for m in store.session("s").read()] == ["first", "second"]


def test_a_writer_waits_its_turn_at_most_the_timeout(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path}/ledger.db", timeout=0.05,
                    retry=RetryPolicy.none()) as store:
        pool = store._backend._connections  # type: ignore[attr-defined]
        outcome: list[object] = []
        second = _second_writer(store, outcome)
        with pool.use(write=True):
            second.start()
            second.join()
        assert isinstance(outcome[0], BackendUnavailable)
        assert "its other writes held the database for 0.05 s" in str(outcome[0])
        store.session("s").append([user("its turn now")])
        assert store.session("s").read().version == 1


def test_a_commit_that_fails_is_a_backend_error_and_keeps_nothing(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path}/ledger.db", retry=RetryPolicy.none()) as store:
        store.session("s").append([user("hello")])
        backend = store._backend  # type: ignore[attr-defined]
        db = backend._connections._writes._db  # the write connection, between writes
        db.execute("CREATE TABLE parent (id INTEGER PRIMARY KEY)")
        db.execute("CREATE TABLE child (parent INTEGER"
                   " REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)")
        db.execute("PRAGMA foreign_keys = ON")  # checked at COMMIT: a commit that fails

        def orphan() -> None:
            with backend._transaction(write=True) as tx:
                tx.execute("UPDATE sessions SET updated_at = 7")
                tx.execute("INSERT INTO child VALUES (99)")

        with pytest.raises(BackendError, match="FOREIGN KEY constraint failed"):
            orphan()

        info = store.session("s").info()
        assert info is not None and info.updated_at.timestamp() != 7
        assert store.session("s").append([user("again")]).version == 2


def test_a_read_uses_the_idle_write_connection_else_one_of_its_own(tmp_path: Path) -> None:
    """The write connection's pages are the ones the last write left (SQLite drops
    another connection's cache at each commit): a read takes it when no writer is at
    work; while a writer is, the read borrows a connection and sees only what committed."""
    with open_store(f"sqlite:///{tmp_path}/ledger.db") as store:
        store.session("s").append([user("first")])
        pool = store._backend._connections  # type: ignore[attr-defined]
        writer = pool._writes._db
        with pool.read() as db:
            assert db is writer
        with pool.use(write=True) as tx:  # a writer at work, not committed yet
            tx.execute("UPDATE sessions SET version = 99")
            with pool.read() as db:
                assert db is not writer
            assert [m.text for m in store.session("s").read()] == ["first"]
            assert store.session("s").read().version == 1
        with pool.read() as db:
            assert db is writer
