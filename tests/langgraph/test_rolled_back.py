"""A namespace whose ledger went back in time under a running saver is loud, without
the application's help; legitimate deletes, prunes, copies and expiry never are.

A saver remembers each namespace's ledger id and version from its own puts and
reads. The same ledger at a lower version can only be acknowledged writes lost
(a failover to a replica that lagged, an older copy restored): CheckpointLost.
A ledger gone or replaced is left to LangGraph (a thread starts over): another
process's delete_thread looks the same, and must not be reported.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from chatledger import ConflictError, RetryPolicy
from chatledger.langgraph import CheckpointLost, LedgerSaver
from chatledger.testing import RedisServer
from tests.conftest import FakeClock
from tests.langgraph._blocking import BlockingSaver
from tests.langgraph._graphs import texts
from tests.langgraph._runs import run
from tests.langgraph.conftest import backend_url, saver_matrix

THREAD = "customer-42"
CONFIG = {"configurable": {"thread_id": THREAD}}


def _turn(saver: Any, text: str, thread: str = THREAD) -> list[str]:
    state = run(saver, "invoke", {"messages": [("user", text)]},
                {"configurable": {"thread_id": thread}})
    return texts(state)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_older_sqlite_copy_restored_under_a_running_saver_is_loud(kind: str,
                                                                    tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    stale = sqlite3.connect(":memory:")
    opener: Any = LedgerSaver if kind == "sync" else BlockingSaver
    with opener.from_url(f"sqlite:///{path}") as saver:
        _turn(saver, "my name is Ada")
        with sqlite3.connect(path) as live:
            live.backup(stale)  # the replica, one turn behind
        _turn(saver, "order 7")
        latest = saver.get_tuple(CONFIG).config["configurable"]["checkpoint_id"]
        with sqlite3.connect(path) as live:
            stale.backup(live)  # the failover

        with pytest.raises(CheckpointLost) as lost:
            _turn(saver, "what is my name?")

    assert lost.value.expected_checkpoint == latest
    assert lost.value.found_checkpoint not in (None, latest)
    assert lost.value.found_ledger == lost.value.ledger and lost.value.found < lost.value.expected
    assert "this saver saw checkpoint" in str(lost.value)


def test_a_redis_failover_to_a_stale_copy_is_loud(private_redis: RedisServer) -> None:
    with LedgerSaver.from_url(private_redis.url) as saver:
        _turn(saver, "my name is Ada")
        keys = private_redis.command("KEYS", "*")
        assert isinstance(keys, list)
        snapshot = [(key, private_redis.command("DUMP", key)) for key in keys]
        _turn(saver, "order 7")
        private_redis.command("FLUSHALL")
        for key, dumped in snapshot:
            private_redis.command("RESTORE", key, 0, dumped)  # type: ignore[arg-type]

        with pytest.raises(CheckpointLost) as lost:
            saver.get_tuple(CONFIG)

    assert lost.value.thread_id == THREAD and lost.value.found_checkpoint is not None


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_ledger_rolled_back_under_a_read_of_a_checkpoint_names_the_latest(
        kind: str, tmp_path: Path) -> None:
    """A read of a given checkpoint reads the latest too, to say what is there now."""
    path = tmp_path / "ledger.db"
    stale = sqlite3.connect(":memory:")
    opener: Any = LedgerSaver if kind == "sync" else BlockingSaver
    with opener.from_url(f"sqlite:///{path}") as saver:
        _turn(saver, "my name is Ada")
        first = saver.get_tuple(CONFIG).config
        with sqlite3.connect(path) as live:
            live.backup(stale)
        _turn(saver, "order 7")
        with sqlite3.connect(path) as live:
            stale.backup(live)

        with pytest.raises(CheckpointLost) as lost:
            saver.get_tuple(first)

    assert lost.value.found_checkpoint == first["configurable"]["checkpoint_id"]


# -- zero false positives, measured ------------------------------------------------


def _legitimate_operations(other: Any, clock: FakeClock | None) -> list[Callable[[], Any]]:
    """What another process may do to the threads, none of it a loss."""
    def delete_for_runs() -> None:
        other.delete_for_runs(["no-such-run"])

    ops: list[Callable[[], Any]] = [
        lambda: _turn(other, "order 5"),
        lambda: _turn(other, "my name is Bob", "other-thread"),
        lambda: other.delete_thread(THREAD),
        lambda: other.prune([THREAD]),
        lambda: other.prune([THREAD], strategy="delete"),
        lambda: other.delete_thread("copy") or other.copy_thread(THREAD, "copy"),
        lambda: other.delete_thread(THREAD) or other.copy_thread("copy", THREAD),
        delete_for_runs,
        lambda: run(other, "update_state", CONFIG, {"messages": [("ai", "edited")]}),
    ]
    if clock is not None:
        ops.append(lambda: clock.advance(150))  # past the ttl: the thread expires
    return ops


def _dealt(operations: list[Callable[[], Any]], rounds: int,
           draw: random.Random) -> Iterator[list[Callable[[], Any]]]:
    """Two operations a round, dealt from the operations shuffled anew as they run out:
    in a short run each comes up as often as the others (drawn at random, some never did)."""
    deck: list[Callable[[], Any]] = []
    for _ in range(rounds):
        if len(deck) < 2:
            deck = draw.sample(operations, len(operations)) + deck
        yield [deck.pop(), deck.pop()]


@pytest.mark.parametrize(("where", "kind"), saver_matrix())
def test_legitimate_changes_by_another_saver_are_never_reported(
        where: str, kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    clock = FakeClock() if where in ("memory", "sqlite", "postgres", "dynamodb") else None
    options: dict[str, Any] = {"retry": RetryPolicy.none()}
    if clock is not None:
        options.update(ttl=100.0, clock=clock)
    url = backend_url(where, request, tmp_path)
    opener: Any = LedgerSaver if kind == "sync" else BlockingSaver
    draw = random.Random(f"{where}-{kind}")
    reported: list[CheckpointLost] = []
    with opener.from_url(url, **options) as saver, opener.from_url(url, **options) as other:
        operations = _legitimate_operations(other, clock)
        # The saver's logic at length in process; a backend's ledger versions and ids
        # with each operation dealt twice.
        rounds = 60 if where == "memory" else len(operations)
        for step, dealt in enumerate(_dealt(operations, rounds, draw)):
            for operation in dealt:
                operation()
            try:
                _turn(saver, f"order {step}")
                saver.get_tuple(CONFIG)
            except CheckpointLost as lost:
                reported.append(lost)
    assert reported == []


def test_one_saver_read_and_written_from_many_threads_reports_nothing(tmp_path: Path) -> None:
    """A read that began before a put was acknowledged returns an older version:
    the saver judges a read only by what it saw before that read began."""
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        for turn in range(15):
            try:
                _turn(saver, f"order {turn}", f"t{worker % 2}")
                saver.get_tuple({"configurable": {"thread_id": f"t{worker % 2}"}})
            except ConflictError:
                continue  # two workers on one thread: one is refused, as it should be
            except BaseException as exc:
                errors.append(exc)

    with LedgerSaver.from_url(f"sqlite:///{tmp_path}/l.db") as saver, \
            ThreadPoolExecutor(4) as pool:
        list(pool.map(work, range(4)))

    assert errors == []
