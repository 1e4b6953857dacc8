"""The advisory locks at work: purge and the expiry sweep never leave half a session."""

from __future__ import annotations

import threading
from dataclasses import replace
from urllib.parse import quote

import psycopg

from chatledger import BackendUnavailable, ChatLedgerError, ConflictError, Store, user
from tests.conftest import FakeClock
from tests.postgres.conftest import OpenPostgres, retrying


def _orphans(raw: psycopg.Connection, namespace: str) -> list[tuple[object, ...]]:
    """Entries or ids without their session, and sessions whose entries do not add up."""
    return raw.execute(
        "SELECT 'entry', sid FROM chatledger.entries e WHERE ns = %(ns)s AND NOT EXISTS"
        " (SELECT 1 FROM chatledger.sessions s WHERE s.ns = e.ns AND s.sid = e.sid)"
        " UNION ALL SELECT 'id', sid FROM chatledger.message_ids i WHERE ns = %(ns)s AND"
        " NOT EXISTS (SELECT 1 FROM chatledger.sessions s WHERE s.ns = i.ns AND s.sid = i.sid)"
        " UNION ALL SELECT 'count', sid FROM chatledger.sessions s WHERE ns = %(ns)s AND"
        " version - first_seq + 1 <> (SELECT count(*) FROM chatledger.entries e"
        " WHERE e.ns = s.ns AND e.sid = s.sid)", {"ns": namespace}).fetchall()


def test_purge_racing_appends_leaves_no_half_deleted_session(
    open_postgres: OpenPostgres, raw: psycopg.Connection, namespace: str,
) -> None:
    store = open_postgres(retry=retrying())
    stop = threading.Event()
    failures: list[BaseException] = []

    def write(worker: int) -> None:
        session = store.session(f"p-{worker}")
        while not stop.is_set():
            try:
                session.append([user("q"), user("a")])
            except (BackendUnavailable, ConflictError) as exc:  # not expected: reported
                failures.append(exc)

    writers = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for thread in writers:
        thread.start()
    purged = sum(store.purge(prefix="p-") for _ in range(20))
    stop.set()
    for thread in writers:
        thread.join()
    assert failures == []
    assert purged > 0
    assert _orphans(raw, namespace) == []


def test_the_sweep_deletes_expired_sessions_in_bounded_batches_and_keeps_renewed_ones(
    open_postgres: OpenPostgres, raw: psycopg.Connection, namespace: str, clock: FakeClock,
) -> None:
    store = open_postgres(ttl=60, clock=clock)
    for i in range(150):
        store.session(f"old-{i}").append([user("hi")])
    clock.advance(61)
    store.session("old-0").append([user("renewed")])  # met by a writer: starts afresh
    backend = store._backend
    assert backend.sweep_expired() == 100  # type: ignore[attr-defined]
    assert backend.sweep_expired() == 49  # type: ignore[attr-defined]
    assert backend.sweep_expired() == 0  # type: ignore[attr-defined]
    rows = raw.execute("SELECT sid, version FROM chatledger.sessions WHERE ns = %s",
                       (namespace,)).fetchall()
    assert rows == [("old-0", 1)]
    assert [m.text for m in store.session("old-0").read()] == ["renewed"]
    assert _orphans(raw, namespace) == []


def test_first_appends_racing_on_a_new_session_make_one_ledger(
    open_postgres: OpenPostgres,
) -> None:
    store = open_postgres(retry=retrying())
    barrier = threading.Barrier(8)
    outcomes: list[str] = []

    def first() -> None:
        barrier.wait()
        try:
            store.session("new").append([user("first")], expect_version=0)
            outcomes.append("stored")
        except ConflictError:
            outcomes.append("conflict")

    threads = [threading.Thread(target=first) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["conflict"] * 7 + ["stored"]
    assert store.session("new").info().version == 1  # type: ignore[union-attr]


def test_stores_racing_on_one_session_keep_every_append_when_the_default_isolation_is_higher(
    open_postgres: OpenPostgres, postgres_url: str,
) -> None:
    # The append's function needs READ COMMITTED: on a server (or role) whose default
    # is REPEATABLE READ, the store sends it inside a READ COMMITTED transaction.
    options = quote(r"-c default_transaction_isolation=repeatable\ read")
    url = f"{postgres_url}{'&' if '?' in postgres_url else '?'}options={options}"
    stores = [open_postgres(url=url, retry=retrying()) for _ in range(4)]
    assert [s._backend._read_committed for s in stores] == [False] * 4  # type: ignore[attr-defined]
    barrier = threading.Barrier(len(stores))
    failures: list[BaseException] = []

    def write(store: Store) -> None:
        session = store.session("shared")
        barrier.wait()
        for i in range(15):
            try:
                session.append([user(f"q{i}"), user(f"a{i}")])
            except ChatLedgerError as exc:  # not expected: reported
                failures.append(exc)

    threads = [threading.Thread(target=write, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    history = stores[0].session("shared").read()
    assert history.version == len(stores) * 15 * 2
    assert len(history.messages) == history.version


def test_an_append_waits_for_a_step_by_step_writer_that_loaded_its_session(
    open_postgres: OpenPostgres,
) -> None:
    """An append takes no advisory lock on an existing session: a
    step-by-step writer (here a trim) locks the session's row when it loads it, or an
    append would slip in between its load and its save, and the save would write the
    version it loaded back over the append's (an entry past the version, lost)."""
    trimmer, appender = open_postgres(), open_postgres()
    session = appender.session("s")
    for text in "abc":
        session.append([user(text)])  # the appender plans its next append at version 3
    backend = trimmer._backend
    appended = threading.Event()

    def append() -> None:
        session.append([user("d")])
        appended.set()

    with backend._transaction(write=True) as tx:  # type: ignore[attr-defined]
        state = backend._load(tx, "s")  # type: ignore[attr-defined]
        backend._cut(tx, "s", 3)  # type: ignore[attr-defined]
        thread = threading.Thread(target=append)
        thread.start()
        pid = tx.connection.info.backend_pid
        while not appended.is_set() and not tx.connection.execute(
                "SELECT count(*) > 0 FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))",
                (pid,)).fetchone()[0]:
            appended.wait(0.01)  # until the append waits for this writer, or is done
        backend._save(tx, "s", replace(state, first_seq=3), created=False)  # type: ignore[attr-defined]
    thread.join()
    history = appender.session("s").read()
    assert (history.version, [m.text for m in history.messages]) == (4, ["c", "d"])
