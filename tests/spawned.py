"""Eight spawned worker processes for a whole test session (per xdist worker), shared
by the multi-process tests: spawning eight interpreters for each test cost more than
most of those tests' own work. The processes import what a job needs once; a job opens
and closes its own stores, so nothing carries over from one test to the next."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import pytest

WORKERS = 8


class SpawnedWorkers:
    """``run(job, *args)`` calls ``job(start, worker, *args)`` in every process at once:
    ``start`` is a barrier, so that no worker finishes before the others begin."""

    def __init__(self) -> None:
        self._context = multiprocessing.get_context("spawn")
        self._manager = self._context.Manager()
        self._pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(WORKERS, mp_context=self._context)

    def run(self, job: Callable[..., Any], *args: Any, timeout: float = 120) -> list[Any]:
        start = self._manager.Barrier(WORKERS)
        try:
            futures = [self._pool.submit(job, start, worker, *args) for worker in range(WORKERS)]
            return [future.result(timeout=timeout) for future in futures]
        except BrokenProcessPool:  # a worker died (a crash under test): the next test starts afresh
            self._pool = self._new_pool()
            raise

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)
        self._manager.shutdown()


@pytest.fixture(scope="session")
def spawned_workers() -> Iterator[SpawnedWorkers]:
    workers = SpawnedWorkers()
    try:
        yield workers
    finally:
        workers.close()
