"""``check_checkpointer``: do concurrent runs of one LangGraph thread fork it, lose an
acknowledged turn or apply one twice, on any checkpointer?

N processes (spawned) run a small real LangGraph graph on shared threads: each
turn appends a question (the input) and an answer (a node) to a list channel,
marked with the process and round. Each round, the processes are dealt over a
few threads: some advance a thread that has checkpoints, some start a new one
together. Every run of a round is held, right after it read its thread's latest
checkpoint, until all of them have (a barrier), so they really race: each then
puts checkpoints whose parent is the same one. This runs under each durability
mode (``sync``, ``async``, ``exit``: ``exit`` puts once, at the end of the run).

Then every thread is read back through the saver (``get_tuple`` and ``list``)
and the report names, with the checkpoint ids involved: **forks** (a checkpoint
with two or more children, or a thread with two first checkpoints), **lost
acknowledged turns** (``invoke`` returned, but the question or answer is not in
the latest checkpoint's state) and **duplicated items** (in the latest state
twice). A turn that raised one of ``refusals`` (chatledger's
``CheckpointConflict``, a ``ConflictError``, by default) was refused: that is how
a checkpointer keeps its promises under contention, and it is only counted.

The checkpointer must be shared by processes (a file, a server): LangGraph's
``InMemorySaver`` lives in one process, so check it with ``mode="threads"``,
which runs the same workload in threads on one saver.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._errors import ConflictError
from . import _lineage
from ._checkpointer_report import CheckpointerReport, Turn
from ._concurrency import WorkerError, check_mode, check_picklable

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

    from ._chat_turns import Plan

__all__ = ["check_checkpointer"]

DURABILITIES = ("sync", "async", "exit")

FACTORY_INSTEAD = ("give 'module:callable', define it at the top of an importable module, "
                   "or pass mode='threads'")
"""What to give a checker whose factory does not pickle (check_store's too)."""


def check_checkpointer(
    factory: str | Callable[[str], Any], target: str | None = None, *,
    processes: int = 4, turns: int = 4, threads: int = 2, thread_rounds: int = 3,
    durability: Sequence[str] = DURABILITIES,
    refusals: Sequence[type[BaseException]] = (ConflictError,),
    mode: Literal["processes", "threads"] = "processes",
    timeout: float = 120.0, seed: int = 0,
) -> CheckpointerReport:
    """Race ``processes`` runs of a chat graph per round on shared threads, then check them.

    ``factory(target)`` returns a sync ``BaseCheckpointSaver``, or a context
    manager that yields one (``SqliteSaver.from_conn_string``); give it as
    ``"package.module:callable"`` (``"langgraph.checkpoint.sqlite:SqliteSaver.
    from_conn_string"``) or as a function defined at the top of an importable
    module, since each spawned process calls it. ``target`` is what the
    processes share, a URL or a path; by default a file in a new temporary
    directory, removed afterwards: a ``sqlite:///`` URL for chatledger's own
    savers, a bare path for any other factory. The checker opens a saver in this process
    too: it calls its ``setup()``, if it has one, before the run (so the
    processes do not race to create tables) and reads every thread back with it
    after. Thread ids are new on each call, so a shared server can be reused.

    Each process runs ``turns`` turns per durability mode: each round, the
    processes are dealt over ``threads`` threads (at least two on each, so
    ``threads <= processes // 2``), and a thread lives ``thread_rounds`` rounds
    before its slot starts a new one. The run is bounded by ``timeout``
    seconds: a process still running then is killed and reported in
    ``failures``; ``seed`` fixes who meets whom.
    """
    _check_arguments(processes=processes, turns=turns, threads=threads,
                     thread_rounds=thread_rounds, durability=durability, timeout=timeout)
    from . import _chat_turns  # noqa: PLC0415 -- langgraph is an optional extra

    check_mode(mode)
    make = _chat_turns.resolve(factory)
    if mode == "processes" and not isinstance(factory, str):
        check_picklable(factory, refusal="check_checkpointer sends the factory to spawned "
                        "processes, and it does not pickle", instead=FACTORY_INSTEAD)
    plan = _chat_turns.make_plan(
        uuid.uuid4().hex[:8], processes=processes, turns=turns, threads=threads,
        thread_rounds=thread_rounds, durabilities=durability, seed=seed)
    started = time.monotonic()
    with _shared(target, _ours(factory)) as shared, _chat_turns.opened(make, shared) as saver:
        if callable(setup := getattr(saver, "setup", None)):
            setup()
        if mode == "threads":
            ran, failures = _chat_turns.run_in_threads(saver, plan, tuple(refusals), timeout)
        else:
            race = _chat_turns.Race(factory, shared, tuple(refusals), timeout)
            ran, failures = _chat_turns.run_in_processes(race, plan)
        ordered = sorted(ran, key=lambda t: (list(durability).index(t.durability), t.round,
                                             t.process))
        return _report(saver, plan, ordered, failures, time.monotonic() - started)


def _check_arguments(*, processes: int, turns: int, threads: int, thread_rounds: int,
                     durability: Sequence[str], timeout: float) -> None:
    if processes < 2:
        raise ValueError(f"processes must be at least 2 to race, not {processes}")
    if not 1 <= threads <= processes // 2:
        raise ValueError(f"threads must be 1 to processes // 2 = {processes // 2} (two "
                         f"processes or more on each thread), not {threads}")
    if turns < 1 or thread_rounds < 1:
        raise ValueError(f"turns and thread_rounds must be positive, not {turns}, "
                         f"{thread_rounds}")
    if not durability or set(durability) - set(DURABILITIES):
        raise ValueError(f"durability must be some of {DURABILITIES}, not {durability!r}")
    if timeout <= 0:
        raise ValueError(f"timeout must be positive, not {timeout}")


def _ours(factory: str | Callable[[str], Any]) -> bool:
    """Whether ``factory`` is chatledger's own (its savers open a store URL, not a path)."""
    module = factory.partition(":")[0] if isinstance(factory, str) else getattr(
        factory, "__module__", None) or ""
    return module == "chatledger" or module.startswith("chatledger.")


@contextlib.contextmanager
def _shared(target: str | None, url: bool) -> Iterator[str]:
    """``target``, or a new SQLite file: as a ``sqlite://`` URL when ``url``, else a path."""
    if target is not None:
        yield target
        return
    with tempfile.TemporaryDirectory(prefix="chatledger-checkpointer-") as directory:
        path = Path(directory) / "checkpoints.db"
        yield f"sqlite:///{path}" if url else str(path)


def _report(saver: BaseCheckpointSaver[Any], plan: Plan, ran: list[Turn],
            failures: list[WorkerError], seconds: float) -> CheckpointerReport:
    readings = [_lineage.read_thread(saver, thread_id, mode) for thread_id, mode in plan.threads]
    on = {r.thread_id: [t for t in ran if t.thread_id == r.thread_id] for r in readings}
    return CheckpointerReport(
        processes=plan.processes, turns=tuple(ran),
        forks=tuple(f for r in readings for f in _lineage.forks(r)),
        lost=tuple(x for r in readings for x in _lineage.lost(r, on[r.thread_id])),
        duplicates=tuple(d for r in readings for d in _lineage.duplicates(r)),
        failures=tuple(failures), threads=len(readings),
        checkpoints=sum(len(r.checkpoints) for r in readings), seconds=seconds)
