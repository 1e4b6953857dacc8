"""The plain append statement (writable CTEs) against every other writer of a session, at once.

Stores open on one server stand for processes: each has its own pool and its own
memory of sessions, so their appends meet only in PostgreSQL. The step-by-step
writer (the transactional base's append, which a PostgreSQL append falls back to)
is called directly where a race needs it. Every race is checked the same way: each
acknowledged batch stored once, in its Ack's seqs, the session's seqs dense, no id
twice, nothing the user should not see.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import psycopg
import pytest

from chatledger import Ack, ConflictError, Message, Store, assistant, open_store, user
from chatledger._backends._sync.transactional import TransactionalBackend
from chatledger._backends.postgres._sync.backend import PostgresBackend, _append_params, _guessed
from chatledger._backends.postgres.arrays import register as register_arrays
from chatledger._core import make_batch
from chatledger.langgraph import LedgerStore
from chatledger.langgraph._item_layout import item_session_id
from tests.conftest import FakeClock
from tests.postgres.conftest import OpenPostgres

_ISOLATIONS = [None, r"repeatable\ read", "serializable"]


def _url(postgres_url: str, isolation: str | None) -> str:
    """The server's URL, with the sessions' default isolation set (None: the server's)."""
    if isolation is None:
        return postgres_url
    options = quote(f"-c default_transaction_isolation={isolation}")
    return f"{postgres_url}{'&' if '?' in postgres_url else '?'}options={options}"


class _Paths:
    """What each append took: statements sent, and falls back to the step-by-step path."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        send, step = PostgresBackend._send, TransactionalBackend.append
        paths = self

        def counted_send(backend: PostgresBackend, session: str, batch: Any, plan: Any,
                         now: float, **how: Any) -> Any:
            seen = send(backend, session, batch, plan, now, **how)
            paths.count("look" if plan is None else "written" if seen.written else "missed")
            return seen

        def counted_step(backend: Any, session: str, batch: Any) -> Ack:
            paths.count("step-by-step")
            return step(backend, session, batch)

        monkeypatch.setattr(PostgresBackend, "_send", counted_send)
        monkeypatch.setattr(TransactionalBackend, "append", counted_step)

    def count(self, what: str) -> None:
        with self._lock:
            self.counts[what] += 1


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> _Paths:
    return _Paths(monkeypatch)


def _step_by_step(store: Store, session: str, messages: list[Message]) -> Ack:
    """The transactional base's append on ``store``'s backend, as a fallback runs it."""
    backend = store._backend  # type: ignore[attr-defined]
    batch = make_batch(messages, None, None, 1 << 30)
    return TransactionalBackend.append(backend, session, batch)


def _check(raw: psycopg.Connection[Any], namespace: str, store: Store, session: str,
           acked: list[tuple[list[str], Ack]], refused: list[list[str]]) -> None:
    """Each Ack'd batch stored once where its Ack says, nothing refused stored, seqs dense."""
    history = store.session(session).read()
    ids = [m.id for m in history.messages]
    assert len(ids) == len(set(ids)), f"an id stored twice: {Counter(ids).most_common(3)}"
    assert history.first_seq == 1 and history.version == len(ids), (history.version, len(ids))
    new = [(batch, ack) for batch, ack in acked if not ack.deduplicated]
    assert sum(len(batch) for batch, _ in new) == len(ids)
    for batch, ack in acked:  # in its Ack's seqs, on one ledger
        assert ids[ack.first_seq - 1:ack.last_seq] == batch, (batch, ack)
        assert ack.ledger == history.ledger
    for batch in refused:
        assert not set(batch) & set(ids), batch
    rows = raw.execute(
        "SELECT (SELECT array_agg(seq ORDER BY seq) FROM chatledger.entries"
        "  WHERE ns = %(ns)s AND sid = %(sid)s),"
        " (SELECT count(*) FROM chatledger.message_ids WHERE ns = %(ns)s AND sid = %(sid)s),"
        " (SELECT count(*) FROM chatledger.sessions WHERE ns = %(ns)s AND sid = %(sid)s)",
        {"ns": namespace, "sid": session}).fetchone()
    assert rows is not None
    assert rows[0] == list(range(1, len(ids) + 1))
    assert rows[1:] == (len(ids), 1)


def _race(workers: list[Callable[[], tuple[list[str], Ack | None]]],
          ) -> tuple[list[tuple[list[str], Ack]], list[list[str]], list[BaseException]]:
    """Run the workers at once (a barrier): their Acks, the batches refused, and errors."""
    barrier = threading.Barrier(len(workers))
    acked: list[tuple[list[str], Ack]] = []
    refused: list[list[str]] = []
    errors: list[BaseException] = []

    def run(work: Callable[[], tuple[list[str], Ack | None]]) -> None:
        barrier.wait()
        try:
            batch, ack = work()
        except BaseException as exc:  # reported below, whatever it is
            errors.append(exc)
            return
        if ack is None:
            refused.append(batch)
        else:
            acked.append((batch, ack))

    threads = [threading.Thread(target=run, args=(work,)) for work in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return acked, refused, errors


def _commit_once_waited_for(holder: psycopg.Connection[Any], url: str,
                            answered: threading.Event | None = None) -> bool:
    """Commit ``holder``'s transaction once another session waits for it (or ``answered``
    is set, or 5 s passed); whether one waited. Watched from a connection of its own,
    in autocommit: a transaction sees pg_stat_activity as it first read it."""
    pid, until = holder.info.backend_pid, time.monotonic() + 5
    with psycopg.connect(url, autocommit=True) as watcher:
        while not (answered is not None and answered.is_set()) and time.monotonic() < until:
            row = watcher.execute("SELECT count(*) > 0 FROM pg_stat_activity"
                                  " WHERE %s = ANY(pg_blocking_pids(pid))", (pid,)).fetchone()
            if row is not None and row[0]:
                holder.commit()
                return True
            time.sleep(0.005)
    holder.commit()
    return False


@contextlib.contextmanager
def _another_writer(url: str, namespace: str, sid: str, waits: list[bool]) -> Iterator[int]:
    """Another writer's append of one entry to ``sid``, holding the session's row while
    the block runs (its version, yielded); it commits once a statement waits for it, or
    when the block ends (``waits``: whether one waited)."""
    body = make_batch([user("other")], None, None, 1 << 20).blobs[0]
    other = psycopg.connect(url)
    version = other.execute(
        "UPDATE chatledger.sessions SET version = version + 1 WHERE ns = %s AND sid = %s"
        " RETURNING version", (namespace, sid)).fetchone()[0]  # type: ignore[index]
    other.execute("INSERT INTO chatledger.entries VALUES (%s, %s, %s, %s)",
                  (namespace, sid, version, body))
    other.execute("INSERT INTO chatledger.message_ids VALUES (%s, %s, %s, %s, %s, %s)",
                  (namespace, sid, f"other-{version}".encode(), version, version, version))
    answered = threading.Event()
    committer = threading.Thread(target=lambda: waits.append(
        _commit_once_waited_for(other, url, answered)))
    committer.start()
    try:
        yield version
    finally:
        answered.set()
        committer.join()
        other.close()


def _stepper(store: Store, session: str, messages: list[Message],
             ) -> Callable[[], tuple[list[str], Ack | None]]:
    return lambda: ([m.id for m in messages], _step_by_step(store, session, messages))


def _appender(store: Store, session: str, messages: list[Message],
              ) -> Callable[[], tuple[list[str], Ack | None]]:
    return lambda: ([m.id for m in messages], store.session(session).append(messages))


@pytest.mark.parametrize("isolation", _ISOLATIONS)
@pytest.mark.parametrize("expired", [False, True], ids=["new", "expired"])
def test_creators_of_one_session_on_every_path_make_one_ledger_and_keep_every_append(
        open_postgres: OpenPostgres, postgres_url: str, raw: psycopg.Connection[Any],
        namespace: str, clock: FakeClock, paths: _Paths, isolation: str | None,
        expired: bool) -> None:
    """Two plain statements that create the session (ON CONFLICT under the advisory
    lock, from a snapshot taken before it), a batch over 64 KiB (it looks first), and a
    step-by-step writer (a plain INSERT after the advisory lock), on a session that
    does not exist or has expired. The snapshot the statement answers from may be
    older than the row it met: the store plans again, never forks the ledger, never
    surfaces the sessions' key."""
    url = _url(postgres_url, isolation)
    stores = [open_postgres(url=url, ttl=60, clock=clock) for _ in range(4)]
    deadline, rounds = time.monotonic() + 2.0, 0
    while time.monotonic() < deadline or rounds < 10:
        rounds += 1
        session = f"r-{rounds}"
        if expired:  # every store knows it (each plans an UPDATE), then it expires
            for store in stores:
                store.session(session).append([user("old", id=f"old-{uuid.uuid4().hex}")])
            clock.advance(61)
        big = [user("big", data=b"x" * 70_000, id=f"b-{rounds}")]
        pair = [user("q", id=f"q-{rounds}"), assistant("a", id=f"a-{rounds}")]
        one = [user("one", id=f"o-{rounds}")]
        step = [user("step", id=f"s-{rounds}")]
        acked, refused, errors = _race([
            _appender(stores[0], session, one), _appender(stores[1], session, pair),
            _appender(stores[2], session, big),
            _stepper(stores[3], session, step)])
        assert errors == [], errors
        assert refused == []
        _check(raw, namespace, stores[0], session, acked, refused)
    print(f"\n{rounds} rounds, isolation {isolation}, expired {expired}: {dict(paths.counts)}")


@pytest.mark.parametrize("isolation", _ISOLATIONS)
def test_stores_racing_on_one_session_keep_every_acknowledged_append_once(
        open_postgres: OpenPostgres, postgres_url: str, raw: psycopg.Connection[Any],
        namespace: str, paths: _Paths, isolation: str | None) -> None:
    """8 stores append to one session 25 times each; every fifth append names the version
    it read just before (refused when another came in between). Each Ack'd batch is
    stored once, where its Ack says, and no refusal stored anything."""
    url = _url(postgres_url, isolation)
    stores = [open_postgres(url=url) for _ in range(8)]
    stores[0].session("s").append([user("start", id="start")])
    acked: list[tuple[list[str], Ack]] = [(["start"], Ack(1, 1, 1, ledger=""))]
    refused: list[list[str]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(stores))

    def write(worker: int, store: Store) -> None:
        session = store.session("s")
        barrier.wait()
        for i in range(25):
            batch = ([user(f"{worker}.{i}", id=f"{worker}.{i}")] if i % 3 else
                     [user(f"{worker}.{i}q", id=f"{worker}.{i}q"),
                      assistant(f"{worker}.{i}a", id=f"{worker}.{i}a")])
            ids = [m.id for m in batch]
            try:
                if i % 5 == 4:
                    expected = session.read(last=1).version
                    try:
                        ack = session.append(batch, expect_version=expected)
                    except ConflictError:
                        with lock:
                            refused.append(ids)
                        continue
                    assert ack.first_seq == expected + 1, (ack, expected)
                else:
                    ack = session.append(batch)
            except BaseException as exc:  # reported below, whatever it is
                with lock:
                    errors.append(exc)
                return
            with lock:
                acked.append((ids, ack))

    threads = [threading.Thread(target=write, args=(i, store)) for i, store in enumerate(stores)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    took = time.monotonic() - started
    assert errors == [], errors
    history = stores[0].session("s").read()
    acked[0] = (["start"], Ack(1, 1, 1, ledger=history.ledger or ""))
    _check(raw, namespace, stores[0], "s", acked, refused)
    appends = len(acked) - 1 + len(refused)
    print(f"\nisolation {isolation}: {appends} appends in {took:.2f} s (NOISY),"
          f" {len(refused)} refused (expect_version), paths {dict(paths.counts)}")


def test_an_append_that_waits_for_other_writers_twice_still_writes_in_its_third_statement(
        open_postgres: OpenPostgres, postgres_url: str, namespace: str, paths: _Paths,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain statement that waited for another writer's commit answers from its
    snapshot, taken before: the session as it planned from. Sending that plan again
    cannot succeed, so that answer must not cost a second guess: an append that meets
    two other writers' commits, each while it waits, still writes in its third
    planned statement, as with the schema's function (whose answers were fresh),
    rather than falling back to the step-by-step transaction."""
    store = open_postgres()
    session = store.session("s")
    session.append([user("a", id="a")])  # the store plans its next append at version 1
    target, send = store._backend, PostgresBackend._send  # type: ignore[attr-defined]
    interfered: list[int] = []
    waits: list[bool] = []

    def interfering(backend: PostgresBackend, sid: str, batch: Any, plan: Any,
                    now: float, **how: Any) -> Any:
        if backend is not target or plan is None or len(interfered) == 2:
            return send(backend, sid, batch, plan, now, **how)
        # Another writer's append holds the row while this statement starts; it commits
        # once the statement waits for it (or has answered without waiting).
        with _another_writer(postgres_url, namespace, sid, waits) as version:
            interfered.append(version)
            return send(backend, sid, batch, plan, now, **how)

    monkeypatch.setattr(PostgresBackend, "_send", interfering)
    ack = session.append([user("b", id="b")])
    assert interfered == [2, 3]
    assert waits == [True, True]  # each time, the statement waited for the other's commit
    assert paths.counts["step-by-step"] == 0, "fell back to the step-by-step transaction"
    assert (ack.first_seq, ack.version) == (4, 4)
    history = session.read()
    assert [m.text for m in history.messages] == ["a", "other", "other", "b"]


def test_after_meeting_another_writer_a_store_sends_through_the_function_for_a_while(
        open_postgres: OpenPostgres, postgres_url: str, namespace: str, paths: _Paths,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The plain statement's answer after a wait is its snapshot's, older than the row:
    a conflict costs it a look more than the function, whose statements each take
    their snapshot after the lock. Once a store met another writer on a session, its
    next appends there go through the function: a conflict is one statement that
    answers with the row as it is, then the write."""
    store = open_postgres()
    session = store.session("s")
    session.append([user("a", id="a")])
    target, send = store._backend, PostgresBackend._send  # type: ignore[attr-defined]
    waits: list[bool] = []
    armed: list[bool] = []  # the next planned statement meets another writer

    def interfering_once(backend: PostgresBackend, sid: str, batch: Any, plan: Any,
                         now: float, **how: Any) -> Any:
        if backend is not target or plan is None or not armed:
            return send(backend, sid, batch, plan, now, **how)
        armed.clear()
        with _another_writer(postgres_url, namespace, sid, waits):
            return send(backend, sid, batch, plan, now, **how)

    monkeypatch.setattr(PostgresBackend, "_send", interfering_once)
    armed.append(True)
    session.append([user("b", id="b")])  # plain statement: a stale answer, a look, the write
    first = dict(paths.counts)
    assert (first.get("missed"), first.get("look"), first.get("written")) == (1, 1, 2)
    armed.append(True)
    session.append([user("c", id="c")])  # the function: a fresh answer, then the write
    second = {k: paths.counts[k] - first.get(k, 0) for k in ("missed", "look", "written")}
    assert second == {"missed": 1, "look": 0, "written": 1}, paths.counts
    assert waits == [True, True]  # each time, the statement waited for the other's commit
    assert paths.counts["step-by-step"] == 0
    assert [m.text for m in session.read().messages] == ["a", "other", "b", "other", "c"]


@pytest.mark.parametrize("isolation", [None, r"repeatable\ read"])
def test_ledger_stores_racing_on_one_item_keep_the_vectors_of_its_newest_version_only(
        pgvector_url: str, isolation: str | None) -> None:
    """LedgerStore's puts send their vectors with the append (the pipeline path: the
    statement, then the rows only if it wrote the entry). Three stores put one item at
    once: every put stored, and the vectors are the newest version's, whichever path
    (plain statement, look, step-by-step) wrote it."""
    namespace = f"vec-{uuid.uuid4().hex[:12]}"
    url = _url(f"{pgvector_url}?namespace={namespace}", isolation)
    index = {"dims": 3, "fields": ["text"],
             "embed": lambda texts: [[1.0 + len(t), float(i + 1), 0.5] for i, t in
                                     enumerate(texts)]}
    stores = [LedgerStore(open_store(url), owns_store=True, index=index) for _ in range(3)]
    barrier = threading.Barrier(len(stores))
    errors: list[BaseException] = []

    def put(worker: int, store: LedgerStore) -> None:
        barrier.wait()
        for i in range(15):
            try:
                store.put(("n",), "k", {"text": f"{worker}-{i}" + "x" * i})
            except BaseException as exc:  # reported below, whatever it is
                errors.append(exc)

    threads = [threading.Thread(target=put, args=(i, s)) for i, s in enumerate(stores)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [], errors
        session = item_session_id(("n",), "k")
        version = stores[0].store.session(session).read(last=1).version
        assert version == len(stores) * 15
        with psycopg.connect(pgvector_url) as raw:
            rows = raw.execute("SELECT DISTINCT seq FROM chatledger.item_vectors"
                               " WHERE ns = %s AND sid = %s", (namespace, session)).fetchall()
        assert rows == [(version,)]
        found = stores[0].search(("n",), query="zz")
        assert [item.value for item in found] == [stores[0].get(("n",), "k").value]  # type: ignore[union-attr]
    finally:
        for store in stores:
            store.close()


@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
@pytest.mark.parametrize("in_flight", [False, True], ids=["committed", "in-flight"])
def test_a_retry_whose_reply_was_lost_is_deduplicated_exactly(
        open_postgres: OpenPostgres, postgres_url: str, raw: psycopg.Connection[Any],
        namespace: str, paths: _Paths, existing: bool, in_flight: bool) -> None:
    """The store retries a batch whose reply was lost with the same ids, planned from
    the state it knew before (it never learnt the attempt's). The attempt has
    committed, or still holds the session's lock when the retry's statement starts
    (the retry waits, then answers from a snapshot older than the attempt's commit):
    either way an Ack marked deduplicated, with the attempt's seqs, nothing stored twice."""
    store = open_postgres()
    session = store.session("s")
    if existing:
        session.append([user("before", id="before")])
    backend = store._backend  # type: ignore[attr-defined]
    known = backend._known.get("s")
    pair = [user("q", id="q1"), assistant("a", id="a1")]
    batch = make_batch(pair, None, None, 1 << 20)
    now = time.time()
    plan = _guessed("s", batch, known, now, None)
    assert plan is not None and plan.created is not existing
    attempt = psycopg.connect(postgres_url)  # the attempt, on a connection of its own
    register_arrays(attempt)
    written = attempt.execute(backend.sql.grow(created=plan.created, count=2),
                              _append_params(namespace, "s", batch, plan, now),
                              binary=True).fetchone()
    assert written is not None and written[0]
    committer, waited = None, []
    if in_flight:  # committed once the retry waits for it
        committer = threading.Thread(target=lambda: waited.append(
            _commit_once_waited_for(attempt, postgres_url)))
        committer.start()
    else:
        attempt.commit()
    try:
        again = session.append(pair)  # the store's retry: same ids, planned from `known`
    finally:
        if committer is not None:
            committer.join()
        attempt.close()
    assert waited == [True] * in_flight  # the retry's statement waited for the attempt
    first = 2 if existing else 1
    assert (again.deduplicated, again.first_seq, again.last_seq) == (True, first, first + 1)
    assert again.ledger == plan.state.ledger
    history = session.read()
    assert [m.id for m in history.messages] == ["before"] * existing + ["q1", "a1"]
    assert raw.execute("SELECT count(*) FROM chatledger.message_ids WHERE ns = %s",
                       (namespace,)).fetchone() == (len(history.messages),)
    assert paths.counts["step-by-step"] == 0
    later = session.append([user("next", id="next")])  # the state is known again
    assert later.first_seq == first + 2 and not later.deduplicated
