"""``run_concurrently``: N workers at once, each with its own recorder.

Processes are started with the ``spawn`` method (as on macOS and Windows, and
safe with threads and open connections), so ``fn`` and ``args`` must pickle: a
function defined at the top of a module, not a lambda or a closure. Every
worker waits at a barrier until all have started, so none is done before the
others begin. The whole run is bounded by ``timeout``: a process still running
then is killed and reported (its records are lost with it); a thread cannot be
killed, so it is reported with the records it had made so far.
"""

from __future__ import annotations

import multiprocessing
import pickle
import queue
import threading
import time
import traceback
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from typing import Any

from ._recorder import Record, Recorder
from ._records import describe_error

__all__ = ["ConcurrentRun", "WorkerError", "WorkersFailed", "run_concurrently"]

Worker = Callable[..., object]


@dataclass(frozen=True)
class WorkerError:
    """A worker that raised, crashed or overran the run's timeout."""

    worker: int
    error: str
    traceback: str = ""

    def __str__(self) -> str:
        return f"worker {self.worker}: {self.error}\n{self.traceback}".rstrip()


Outcomes = dict[int, tuple[list[Record], WorkerError | None]]
# Seconds a worker that reported gets to exit on its own before it is killed.
EXIT_GRACE = 10.0


class WorkersFailed(Exception):
    """Raised by :meth:`ConcurrentRun.raise_errors`; the message holds every error."""


@dataclass(frozen=True)
class ConcurrentRun:
    """Every record of every worker (by start time) and the workers' errors."""

    records: tuple[Record, ...]
    errors: tuple[WorkerError, ...]
    workers: int

    def raise_errors(self) -> None:
        """Raise :class:`WorkersFailed` if any worker failed."""
        if self.errors:
            raise WorkersFailed("\n\n".join(str(error) for error in self.errors))


def run_concurrently(fn: Worker, workers: int = 4, *, processes: bool = True,
                     args: Sequence[Any] = (), timeout: float = 60.0) -> ConcurrentRun:
    """Run ``fn(worker_index, recorder, *args)`` in ``workers`` processes (or threads).

    An exception in a worker ends that worker only, and is reported in
    ``errors`` with its traceback; the records it made before are kept.
    """
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    if timeout <= 0:
        raise ValueError(f"timeout must be positive, not {timeout}")
    if processes:
        check_picklable((fn, tuple(args)), refusal=(
            "run_concurrently(processes=True) sends fn and args to spawned processes, and "
            "they do not pickle"),
            instead="define fn at the top of an importable module, or pass processes=False")
        outcomes = _in_processes(fn, workers, tuple(args), timeout)
    else:
        outcomes = _in_threads(fn, workers, tuple(args), timeout)
    records = sorted((r for i in sorted(outcomes) for r in outcomes[i][0]),
                     key=lambda record: record.start)
    errors = [error for i in sorted(outcomes) if (error := outcomes[i][1]) is not None]
    return ConcurrentRun(records=tuple(records), errors=tuple(errors), workers=workers)


def _work(fn: Worker, recorder: Recorder, args: tuple[Any, ...], start: Any,
          timeout: float) -> WorkerError | None:
    try:
        start.wait(timeout)
        fn(recorder.worker, recorder, *args)
    except BaseException as exc:  # a worker's SystemExit is reported too
        return WorkerError(recorder.worker, describe_error(exc), traceback.format_exc())
    return None


def _process_main(fn: Worker, index: int, args: tuple[Any, ...], start: Any, *,
                  timeout: float, results: Any) -> None:
    recorder = Recorder(index)
    error = _work(fn, recorder, args, start, timeout)
    results.put((index, recorder.records, error))


def check_mode(mode: object) -> None:
    """Refuse a mode of check_checkpointer or check_store that is neither: any other
    word would run the processes' path and fail it in pickle's terms."""
    if mode not in ("processes", "threads"):
        raise ValueError(f"mode must be 'processes' or 'threads', not {mode!r}")


def check_picklable(payload: object, *, refusal: str, instead: str) -> None:
    """Refuse ``payload`` before any process is spawned, when it could not be sent to one:
    ``TypeError`` with ``refusal``, the pickling error, and what to do ``instead``."""
    try:
        pickle.dumps(payload)
    except Exception as exc:
        raise TypeError(f"{refusal} ({describe_error(exc)}): {instead}") from exc


def _in_processes(fn: Worker, workers: int, args: tuple[Any, ...], timeout: float) -> Outcomes:
    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(workers), context.Queue()
    children = [context.Process(target=_process_main, daemon=True,
                                args=(fn, index, args, start),
                                kwargs={"timeout": timeout, "results": results},
                                name=f"chatledger-worker-{index}")
                for index in range(workers)]
    for child in children:
        child.start()
    outcomes: Outcomes = {}
    try:
        outcomes = _collect(results, children, time.monotonic() + timeout)
    finally:
        reap(children, reported=outcomes.keys())
    _drain(results, outcomes)
    for index, child in enumerate(children):
        if index not in outcomes:
            outcomes[index] = ([], _unreported(index, child, timeout))
    return outcomes


def reap(children: Sequence[BaseProcess], reported: Collection[int]) -> None:
    """End the children: those that reported exit on their own, the rest are killed.

    A worker that reported still has its exit to run (its result queue's feeder
    thread, atexit handlers: coverage writes its data file there); killed during
    it, it leaves a half-written file behind. It gets ``EXIT_GRACE`` seconds; a
    worker that never reported (stuck, past the deadline) is killed at once.
    """
    deadline = time.monotonic() + EXIT_GRACE
    for index, child in enumerate(children):
        if index in reported:
            child.join(max(0.0, deadline - time.monotonic()))
    for child in children:
        if child.is_alive():
            child.kill()
        child.join()


def _collect(results: Any, children: Sequence[BaseProcess], deadline: float) -> Outcomes:
    outcomes: Outcomes = {}
    silent_and_dead = False
    while len(outcomes) < len(children) and (left := deadline - time.monotonic()) > 0:
        try:
            index, records, error = results.get(timeout=min(left, 0.2))
        except queue.Empty:
            if any(c.is_alive() for i, c in enumerate(children) if i not in outcomes):
                continue
            # What a child put before exiting is in the pipe: one more wait to read it.
            if silent_and_dead:
                break
            silent_and_dead = True
            continue
        outcomes[index] = (records, error)
    return outcomes


def _drain(results: Any, outcomes: Outcomes) -> None:
    """Add what the children reported as the deadline passed: a child that finished
    then is in the pipe once it has exited (its queue's feeder thread flushed first),
    and counts as having reported, not as one that exited without a word."""
    while True:
        try:
            index, records, error = results.get_nowait()
        except queue.Empty:
            return
        outcomes.setdefault(index, (records, error))


def _unreported(index: int, child: BaseProcess, timeout: float) -> WorkerError:
    if child.exitcode == -9:  # killed by us at the deadline
        return WorkerError(index, f"did not finish within the run's timeout of {timeout} s")
    return WorkerError(index, f"exited with code {child.exitcode} without reporting")


def _in_threads(fn: Worker, workers: int, args: tuple[Any, ...], timeout: float) -> Outcomes:
    start = threading.Barrier(workers)
    recorders = [Recorder(index) for index in range(workers)]
    errors: dict[int, WorkerError | None] = {}

    def run(recorder: Recorder) -> None:
        errors[recorder.worker] = _work(fn, recorder, args, start, timeout)

    threads = [threading.Thread(target=run, args=(recorder,), daemon=True,
                                name=f"chatledger-worker-{recorder.worker}")
               for recorder in recorders]
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    late = f"still running after the run's timeout of {timeout} s"
    return {r.worker: (list(r.records), errors[r.worker] if r.worker in errors
                       else WorkerError(r.worker, late))
            for r in recorders}
