"""Spawned worker processes for a whole test session (per xdist worker), shared by the
multi-process tests: eight for the contract's races, two for LangGraph's. Spawning the
interpreters for each test cost more than most of those tests' own work. The processes
import what a job needs once; a job opens and closes its own stores, so nothing carries
over from one test to the next."""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import pytest

from chatledger.testing._dynamodb_server import set_fake_credentials

WORKERS = 8
# A worker that fails before the start breaks it for the others after this long;
# generous, as the first run spawns the eight interpreters while the first waits.
START_TIMEOUT = 300.0

_held: dict[str, Any] = {}  # in each worker process: the barrier every job waits at


def _hold(start: Any) -> None:
    # The pool may be spawned before a DynamoDB emulator first sets its fake AWS
    # credentials in this process's environment, which the workers then never see.
    set_fake_credentials()
    _untraced()
    _held["start"] = start


def _untraced() -> None:
    """Stop coverage's tracers in this worker process.

    The jobs race stores through code the test processes run too: of the 116 lines
    and 34 branches only these processes reached in the multi-process tests, the
    whole run covers every one elsewhere. Traced, they cost those tests about a sixth
    more CPU (benchmarks/RESULTS.md, 2026-12-06 session 13). What the library runs in
    processes of its own (the checks' and verify's workers, the demo) stays traced."""
    coverage = sys.modules.get("coverage")
    # Two may run: the subprocess patch's, and multiprocessing's own (concurrency);
    # stopping one resumes the one started before it.
    while coverage is not None and (current := coverage.Coverage.current()) is not None:
        current.stop()


def _call(job: Callable[..., Any], worker: int, *args: Any) -> Any:
    return job(_held["start"], worker, *args)


class SpawnedWorkers:
    """``run(job, *args)`` calls ``job(start, worker, *args)`` in every process at once:
    ``start`` is a barrier, so that no worker finishes before the others begin.

    The barrier is handed to the processes when they start (no manager process to
    stop at the end: stopped mid-exit, it would leave a torn coverage file)."""

    def __init__(self, count: int = WORKERS) -> None:
        self.count = count
        self._context = multiprocessing.get_context("spawn")
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        start = self._context.Barrier(self.count, timeout=START_TIMEOUT)
        return ProcessPoolExecutor(self.count, mp_context=self._context,
                                   initializer=_hold, initargs=(start,))

    def run(self, job: Callable[..., Any], *args: Any, timeout: float = 400) -> list[Any]:
        futures = [self._pool.submit(_call, job, worker, *args) for worker in range(self.count)]
        try:
            return [future.result(timeout=timeout) for future in futures]
        except BaseException:  # a broken barrier or pool: the next test starts afresh
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._new_pool()
            raise

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)


@pytest.fixture(scope="session")
def spawned_workers() -> Iterator[SpawnedWorkers]:
    workers = SpawnedWorkers()
    try:
        yield workers
    finally:
        workers.close()


@pytest.fixture(scope="session")
def spawned_pair() -> Iterator[SpawnedWorkers]:
    """Two processes: LangGraph's races (tests/langgraph/test_conflicts.py) each
    started two interpreters that imported LangGraph, 22 in all."""
    workers = SpawnedWorkers(2)
    try:
        yield workers
    finally:
        workers.close()
