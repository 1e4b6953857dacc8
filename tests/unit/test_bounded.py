"""The bounded dicts that a sync store's threads share without a lock.

LangGraph runs a sync saver's calls on its executor's threads, so the backend's
memory of the sessions it wrote (PostgreSQL's states, DynamoDB's meta items) is
written from several threads at once. Dropping the oldest key by iterating the
dict raised ``RuntimeError: dictionary changed size during iteration`` when
another thread added a key in between: an append that had committed failed.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from chatledger._backends.contract import RawInfo
from chatledger._backends.dynamodb import known as dynamodb_known
from chatledger._backends.postgres._sync import backend as postgres_backend
from chatledger._bounded import keep_within

THREADS = 4
ROUNDS = 20_000


@pytest.fixture
def switching() -> Iterator[None]:
    """Threads switch as often as the interpreter allows: the window is a bytecode wide."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


def _race(work: Callable[[int, int], None]) -> list[BaseException]:
    """``work(thread, i)`` for ``ROUNDS`` values of i on each of ``THREADS`` threads;
    what any of them raised."""
    failures: list[BaseException] = []

    def run(thread: int) -> None:
        try:
            for i in range(ROUNDS):
                work(thread, i)
        except BaseException as exc:  # what the test is about: any of them
            failures.append(exc)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures


def test_the_oldest_keys_are_dropped() -> None:
    entries = {"a": 1, "b": 2, "c": 3, "d": 4}
    entries["a"] = 5  # a key set again keeps its place
    keep_within(entries, 2)
    assert entries == {"c": 3, "d": 4}
    keep_within(entries, 2)
    assert entries == {"c": 3, "d": 4}
    keep_within(entries, 0)
    assert entries == {}


@pytest.mark.usefixtures("switching")
def test_threads_bounding_one_dict_never_fail_and_keep_it_bounded() -> None:
    entries: dict[str, int] = {}
    bound = 8

    def work(thread: int, i: int) -> None:
        entries[f"{thread}-{i}"] = i
        keep_within(entries, bound)

    assert _race(work) == []
    assert len(entries) <= bound


@pytest.mark.usefixtures("switching")
def test_dynamodb_meta_items_remembered_from_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dynamodb_known, "REMEMBERED", 8)
    metas = dynamodb_known.KnownMetas()
    assert _race(lambda thread, i: metas.remember(f"{thread}-{i}", None)) == []
    assert len(list(metas)) <= 8


@pytest.mark.usefixtures("switching")
def test_postgres_session_states_remembered_from_threads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The states and contended sessions a PostgreSQL backend keeps (no connection is
    needed to keep them: the object is made without opening it)."""
    monkeypatch.setattr(postgres_backend, "_KNOWN", 8)
    backend = object.__new__(postgres_backend.PostgresBackend)
    backend._known = {}
    backend._contended = {}

    def work(thread: int, i: int) -> None:
        session = f"{thread}-{i}"
        backend._remember(session, RawInfo(i, 1, 0.0, 0.0, None, "ledger"))
        backend._contend(session)

    assert _race(work) == []
    assert len(backend._known) <= 8
    assert len(backend._contended) <= 8
