"""run_concurrently: every worker's records come back, in processes or threads;
a worker that raises, dies or hangs is reported, never swallowed, and the run
ends by its timeout."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from pathlib import Path

import pytest

from chatledger.testing import WorkersFailed, run_concurrently
from chatledger.testing._concurrency import _collect, _drain, _process_main
from tests.testing import _workloads


@pytest.mark.parametrize("processes", [True, False], ids=["processes", "threads"])
def test_every_workers_records_come_back(processes: bool) -> None:
    run = run_concurrently(_workloads.note_pid, 3, processes=processes, args=("tag",),
                           timeout=60)
    assert run.errors == () and run.workers == 3
    assert sorted(r.worker for r in run.records) == [0, 1, 2]
    assert [r.texts for r in sorted(run.records, key=lambda r: r.worker)] == [
        ("w0",), ("w1",), ("w2",)]
    pids = {r.process for r in run.records}
    if processes:
        assert len(pids) == 3 and os.getpid() not in pids
    else:
        assert pids == {os.getpid()}
    run.raise_errors()  # nothing to raise


@pytest.mark.parametrize("processes", [True, False], ids=["processes", "threads"])
def test_a_worker_that_raises_is_reported_and_the_others_kept(processes: bool) -> None:
    run = run_concurrently(_workloads.fail_when_odd, 4, processes=processes, timeout=60)
    assert [e.worker for e in run.errors] == [1, 3]
    assert run.errors[0].error == "RuntimeError: worker 1 broke"
    assert "fail_when_odd" in run.errors[0].traceback
    assert len(run.records) == 4  # the failed workers' records before the error too
    with pytest.raises(WorkersFailed, match=r"(?s)worker 1: RuntimeError.*worker 3:"):
        run.raise_errors()


def test_a_process_that_dies_without_reporting_is_reported() -> None:
    run = run_concurrently(_workloads.exit_abruptly, 2, timeout=60)
    assert [(e.worker, e.error) for e in run.errors] == [
        (1, "exited with code 3 without reporting")]


def test_a_report_that_came_as_the_deadline_passed_counts() -> None:
    """A worker that finished right at the deadline (a loaded machine) reported: its
    records count, and it is not called one that exited without reporting."""
    context = multiprocessing.get_context("spawn")
    results, start = context.Queue(), context.Barrier(1)  # kept: the child opens them
    child = context.Process(target=_process_main,
                            args=(_workloads.note_pid, 0, ("tag",), start),
                            kwargs={"timeout": 60, "results": results})
    child.start()
    child.join(60)
    assert child.exitcode == 0
    outcomes = _collect(results, [child], deadline=time.monotonic())  # already passed
    assert outcomes == {}
    _drain(results, outcomes)
    records, error = outcomes[0]
    assert error is None and [r.texts for r in records] == [("w0",)]
    _drain(results, outcomes)  # nothing more: it returns at once
    assert list(outcomes) == [0]


def test_a_process_that_reported_finishes_its_exit(tmp_path: Path) -> None:
    """Its exit handlers run to the end: killed during them, coverage's data file
    (written at exit) was left half-written, a warning in every run of the suite."""
    run = run_concurrently(_workloads.leave_a_note_at_exit, 2, args=(str(tmp_path), 0.5),
                           timeout=60)
    assert run.errors == () and len(run.records) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exited-0", "exited-1"]


def test_a_hung_process_is_killed_at_the_timeout() -> None:
    run = run_concurrently(_workloads.hang, 2, timeout=5)
    assert [(e.worker, e.error) for e in run.errors] == [
        (1, "did not finish within the run's timeout of 5 s")]
    assert [r.worker for r in run.records] == [0]  # the killed one's records die with it


def test_a_hung_thread_is_reported_with_its_records_so_far() -> None:
    release = threading.Event()
    try:
        run = run_concurrently(_workloads.hang, 2, processes=False, args=(release,),
                               timeout=1)
    finally:
        release.set()
    assert [(e.worker, e.error) for e in run.errors] == [
        (1, "still running after the run's timeout of 1 s")]
    assert sorted(r.worker for r in run.records) == [0, 1]


def test_what_cannot_reach_a_spawned_process_is_refused_up_front() -> None:
    with pytest.raises(TypeError, match="define fn at the top of an importable module"):
        run_concurrently(lambda worker, recorder: None, 2)


@pytest.mark.parametrize(("workers", "timeout", "message"), [
    (0, 1.0, "workers must be at least 1, not 0"),
    (2, 0.0, "timeout must be positive, not 0.0"),
])
def test_bad_arguments_are_refused(workers: int, timeout: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        run_concurrently(_workloads.note_pid, workers, args=("t",), timeout=timeout)
