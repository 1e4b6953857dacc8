"""check_checkpointer on real savers and real stores: LangGraph's own savers fork
silently and lose acknowledged turns; LedgerSaver refuses the losing writer."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatledger.testing import CheckpointerReport, check_checkpointer
from chatledger.testing._chat_turns import make_plan
from tests.langgraph import _checkpointers
from tests.langgraph.conftest import backend_url

SQLITE_SAVER = "langgraph.checkpoint.sqlite:SqliteSaver.from_conn_string"
LEDGER_SAVER = "chatledger.langgraph:LedgerSaver.from_url"
# Four processes on two threads, two rounds per durability mode: each mode has a
# round where two processes start a thread together while two advance another.
SMALL = {"processes": 4, "threads": 2, "turns": 2, "thread_rounds": 2, "timeout": 120}


def _assert_forks_and_losses(report: CheckpointerReport) -> None:
    assert not report.ok
    assert report.forks and report.lost
    assert {f.durability for f in report.forks} == {"sync", "async", "exit"}
    assert report.refused == () and report.errors == () and report.failures == ()
    assert all(lost.turn.outcome == "acknowledged" and lost.held_by for lost in report.lost)
    assert "NOT OK" in report.summary() and "lost acknowledged turns:" in report.summary()


def _assert_no_fork_no_loss(report: CheckpointerReport) -> None:
    assert report.ok, report.summary()
    assert len(report.turns) == 4 * 2 * 3 and report.refused  # contention was real
    # Each thread-round had at least one acknowledged turn: refusing everyone is no answer.
    rounds = {(t.thread_id, t.round) for t in report.turns}
    assert rounds == {(t.thread_id, t.round) for t in report.acknowledged}
    assert report.summary().startswith("checkpointer check: ok")


@pytest.mark.slow
def test_langgraph_sqlite_saver_forks_and_loses_acknowledged_turns() -> None:
    report = check_checkpointer(SQLITE_SAVER, **SMALL)
    _assert_forks_and_losses(report)


@pytest.mark.slow
@pytest.mark.parametrize("store", ["sqlite", "redis", "postgres"])
def test_ledger_saver_never_forks_nor_loses_a_turn(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    report = check_checkpointer(LEDGER_SAVER, backend_url(store, request, tmp_path), **SMALL)
    _assert_no_fork_no_loss(report)
    assert {t.error.split(":")[0] for t in report.refused} == {"CheckpointConflict"}


def test_in_memory_saver_checked_in_threads_forks_too() -> None:
    report = check_checkpointer(_checkpointers.in_memory, mode="threads")
    _assert_forks_and_losses(report)
    assert len(report.turns) == 4 * 4 * 3 and report.threads == 3 * 4


def test_ledger_saver_in_threads_on_one_memory_store() -> None:
    report = check_checkpointer(_checkpointers.ledger_in_memory, mode="threads",
                                **{**SMALL, "timeout": 60})
    _assert_no_fork_no_loss(report)


def test_a_turn_that_raises_something_else_is_an_error() -> None:
    report = check_checkpointer(_checkpointers.failing_puts, mode="threads", turns=1,
                                durability=("sync", "exit"))
    assert {t.durability for t in report.errors} == {"exit"} and len(report.errors) == 4
    assert report.errors[0].error == "RuntimeError: disk full"
    assert not report.ok
    assert "4 error(s)" in report.summary() and "turns that raised an error:" in report.summary()


@pytest.mark.slow
def test_a_worker_that_cannot_open_the_saver_fails_the_check_with_its_error() -> None:
    report = check_checkpointer(_checkpointers.broken_in_workers, processes=2, threads=1,
                                turns=1, durability=("sync",), timeout=120)
    assert not report.ok and report.turns == ()
    assert [f.error for f in report.failures] == ["OSError: cannot reach the database"] * 2
    assert "workers that failed:" in report.summary()


@pytest.mark.slow
def test_workers_that_exit_without_reporting_are_reported() -> None:
    report = check_checkpointer(f"{_checkpointers.__name__}:exits_in_workers", processes=2,
                                threads=1, turns=1, durability=("sync",), timeout=120)
    assert [f.error for f in report.failures] == ["exited with code 3 without reporting"] * 2


def test_a_hung_worker_thread_ends_the_run_at_its_timeout() -> None:
    try:
        report = check_checkpointer(_checkpointers.hanging_reads, mode="threads", processes=2,
                                    threads=1, turns=1, durability=("sync",), timeout=2)
    finally:
        _checkpointers.HangingReads.release.set()
    assert {f.worker: f.error for f in report.failures} == {
        0: "stopped at a rendezvous: another worker failed, or the run's timeout of 2 s passed",
        1: "still running after 2 s (a thread cannot be stopped: mode='processes' kills a "
           "worker that hangs)"}


@pytest.mark.parametrize(("arguments", "message"), [
    ({"processes": 1}, "processes must be at least 2"),
    ({"threads": 3}, "threads must be 1 to processes // 2 = 2"),
    ({"threads": 0}, "threads must be 1 to"),
    ({"turns": 0}, "turns and thread_rounds must be positive"),
    ({"thread_rounds": 0}, "turns and thread_rounds must be positive"),
    ({"durability": ("sync", "later")}, "durability must be some of"),
    ({"durability": ()}, "durability must be some of"),
    ({"timeout": 0}, "timeout must be positive"),
    ({"mode": "thread"}, "mode must be 'processes' or 'threads', not 'thread'"),
])
def test_bad_arguments_are_refused_before_anything_runs(
    arguments: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        check_checkpointer(SQLITE_SAVER, **arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(("factory", "error", "message"), [
    ("langgraph.checkpoint.sqlite", ValueError, "is not 'module:callable'"),
    (":SqliteSaver", ValueError, "is not 'module:callable'"),
    ("chatledger.testing._checkpointers:DURABILITIES", TypeError, "is not callable"),
    (f"{_checkpointers.__name__}:not_a_saver", TypeError, "gave dict, not a langgraph"),
    (lambda target: None, TypeError, "does not pickle"),
    ("langgraph.checkpoint.memory:InMemorySaver", TypeError,
     r"^the factory InMemorySaver is called with the target \(a URL or a path\), and takes "
     r"no such argument: give a callable that does, e.g. lambda target: InMemorySaver\(\)"),
    ("langgraph.checkpoint.sqlite.aio:AsyncSqliteSaver.from_conn_string", TypeError,
     r"^the factory gave an async context manager \(_AsyncGeneratorContextManager\): the "
     r"check runs sync BaseCheckpointSavers"),
])
def test_a_factory_that_cannot_be_used_is_refused(factory: object, error: type[Exception],
                                                   message: str) -> None:
    with pytest.raises(error, match=message):
        check_checkpointer(factory)  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_saver_no_worker_shares_is_named_as_such() -> None:
    # InMemorySaver in processes: each worker's turns live and die in its own process.
    report = check_checkpointer(f"{_checkpointers.__name__}:in_memory", processes=2,
                                threads=1, turns=1, durability=("sync",))
    assert report.checkpoints == 0 and len(report.acknowledged) == 2
    assert report.summary().splitlines()[2] == (
        "nothing was read back of what the workers stored: is the saver shared between "
        "them? (a saver keeping its data in its process, as InMemorySaver, needs "
        "mode='threads'; a factory must open the same database for the same target)")
    shared = check_checkpointer(_checkpointers.in_memory, mode="threads", processes=2,
                                threads=1, turns=1, durability=("sync",))
    assert "nothing was read back" not in shared.summary()


def test_the_plan_races_every_round_and_starts_threads_while_others_advance() -> None:
    plan = make_plan("run", processes=4, turns=4, threads=2, thread_rounds=2,
                     durabilities=["sync", "exit"], seed=0)
    assert all(len(steps) == 8 for steps in plan.steps)  # one step per round each
    rounds: dict[tuple[str, int], dict[str, set[int]]] = {}
    news: dict[tuple[str, int], dict[str, set[bool]]] = {}
    for process, steps in enumerate(plan.steps):
        for step in steps:
            key = (step.durability, step.round)
            rounds.setdefault(key, {}).setdefault(step.thread_id, set()).add(process)
            news.setdefault(key, {}).setdefault(step.thread_id, set()).add(step.new_thread)
    assert all(sorted(map(len, threads.values())) == [2, 2] for threads in rounds.values())
    assert all(len(flags) == 1 for threads in news.values() for flags in threads.values())
    assert all(sorted(next(iter(flags)) for flags in news[key].values()) == [False, True]
               for key in news if key[1] > 0)  # one thread starts while one advances
    pairs = {frozenset(group) for threads in rounds.values() for group in threads.values()}
    assert len(pairs) > 2  # who meets whom changes from round to round
    assert plan.threads == tuple(dict.fromkeys(
        (thread, mode) for (mode, _), threads in rounds.items() for thread in threads))
    assert len(plan.threads) == 2 * 5


@pytest.mark.parametrize("factory", [LEDGER_SAVER, "from_url"])
def test_ledger_saver_runs_on_the_default_target(factory: str) -> None:
    """Without a target, chatledger's savers get a sqlite:/// URL (a bare path has no
    scheme for them), any other factory a path."""
    from chatledger.langgraph import LedgerSaver

    made = LedgerSaver.from_url if factory == "from_url" else factory
    report = check_checkpointer(made, mode="threads", processes=2, threads=1, turns=1,
                                thread_rounds=1, timeout=60)
    assert report.ok, report.summary()
    assert len(report.turns) == 2 * 3
