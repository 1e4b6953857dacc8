"""The two-writers clause of ``check_store``: writers put one key at once, then
the check reads what stayed.

Each writer, released together from a barrier, makes ``puts`` rounds of two
puts: its next value of the contested key, then the same value under a key
of its own. A value carries the writer and round, and a body field named for
its writer, so a value mixed from two puts is seen. In ``processes`` mode
each writer is a spawned process with its own store from the factory (two
pods); in ``threads`` mode, a thread on the one store the check holds (for
stores that live in one process, as ``InMemoryStore``). Everything a spawned
process runs is at module level, so ``spawn`` can import it.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from langgraph.store.base import BaseStore

from ._chat_turns import opened_as, resolve
from ._concurrency import WorkerError, _collect, _unreported, reap
from ._records import describe_error
from ._store_report import Verdict

__all__ = ["Writers", "opened_store", "two_writers", "written"]

Factory = Callable[[str], Any]
Namespace = tuple[str, ...]
CONTESTED = "contested"


@dataclass(frozen=True)
class Writers:
    """What the writers share: how to open the store, where, and how much to write."""

    factory: str | Factory
    target: str
    space: Namespace
    writers: int
    puts: int
    timeout: float


@dataclass(frozen=True)
class Written:
    """What one writer was told: how many of each kind of put were acknowledged."""

    contested: int
    own: int
    error: str = ""


def opened_store(factory: Factory, target: str) -> contextlib.AbstractContextManager[BaseStore]:
    """The store the factory makes (``SqliteStore.from_conn_string`` included), as
    :func:`~._chat_turns.opened_as` opens it."""
    return opened_as(factory, target, BaseStore)


def written(writer: int, index: int) -> dict[str, Any]:
    """Writer ``writer``'s value of round ``index``."""
    return {"writer": writer, "i": index, f"body_{writer}": f"{writer}:{index}|" * 256}


def own_key(writer: int, index: int) -> str:
    return f"w{writer}-{index:04}"


def write(store: BaseStore, writer: int, plan: Writers, start: Any) -> Written:
    """One writer's rounds; it stops at its first put that raises."""
    contested = own = 0
    start.wait(plan.timeout)
    try:
        for index in range(plan.puts):
            store.put(plan.space, CONTESTED, written(writer, index))
            contested += 1
            store.put(plan.space, own_key(writer, index), written(writer, index))
            own += 1
    except Exception as exc:
        return Written(contested, own, describe_error(exc))
    return Written(contested, own)


def process_main(writer: int, plan: Writers, start: Any, results: Any) -> None:
    """One spawned writer: its own store on the shared target."""
    try:
        with opened_store(resolve(plan.factory), plan.target) as store:
            outcome = write(store, writer, plan, start)
    except BaseException as exc:
        start.abort()
        results.put((writer, None, WorkerError(writer, describe_error(exc))))
        return
    results.put((writer, outcome, None))


def in_threads(store: BaseStore, plan: Writers) -> tuple[dict[int, Written], list[WorkerError]]:
    start = threading.Barrier(plan.writers)
    done: dict[int, Written] = {}

    def run(writer: int) -> None:
        done[writer] = write(store, writer, plan, start)

    threads = [threading.Thread(target=run, args=(w,), daemon=True,
                                name=f"chatledger-store-writer-{w}")
               for w in range(plan.writers)]
    deadline = time.monotonic() + plan.timeout
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    late = [WorkerError(w, f"still running after {plan.timeout} s")
            for w in range(plan.writers) if w not in done]
    return done, late


def in_processes(plan: Writers) -> tuple[dict[int, Written], list[WorkerError]]:
    context = multiprocessing.get_context("spawn")
    start, results = context.Barrier(plan.writers), context.Queue()
    children = [context.Process(target=process_main, args=(w, plan, start, results),
                                daemon=True, name=f"chatledger-store-writer-{w}")
                for w in range(plan.writers)]
    for child in children:
        child.start()
    outcomes: dict[int, tuple[Any, WorkerError | None]] = {}
    try:
        outcomes = cast(Any, _collect(results, children, time.monotonic() + plan.timeout))
    finally:
        reap(children, reported=outcomes.keys())
    done = {w: outcome for w, (outcome, _) in outcomes.items() if outcome is not None}
    failures = [error for _, error in outcomes.values() if error is not None]
    failures += [_unreported(w, child, plan.timeout) for w, child in enumerate(children)
                 if w not in outcomes]
    return done, failures


def two_writers(store: BaseStore, plan: Writers, mode: str) -> tuple[Verdict, str]:
    """No acknowledged put is lost or torn: every writer's own keys hold what it put;
    the contested key holds one written value whole, from a writer's last
    acknowledged put (or a later one that raised, which may have applied), never
    an older one; ``search`` lists it once."""
    done, failures = in_threads(store, plan) if mode == "threads" else in_processes(plan)
    silent = [w for w in range(plan.writers) if w not in done or done[w].contested == 0]
    if failures or silent:
        why = "; ".join([str(f).splitlines()[0] for f in failures]
                        + [f"writer {w}: {done[w].error}" for w in silent if w in done])
        return "fail", f"a writer did not write: {why}"
    problems = _lost_own(store, plan, done) + _contested(store, plan, done)
    if problems:
        return "fail", "; ".join(problems[:3]) + (
            f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
    refused = sum(w.error != "" for w in done.values())
    note = f" ({refused} writer(s) stopped by an error, acknowledged puts kept)" if refused else ""
    total = sum(w.contested + w.own for w in done.values())
    return "pass", (f"{plan.writers} writers ({mode}), {total} acknowledged puts, none lost "
                    f"or torn; the key they shared holds a last put{note}")


def _lost_own(store: BaseStore, plan: Writers, done: dict[int, Written]) -> list[str]:
    lost = []
    for writer, outcome in sorted(done.items()):
        for index in range(outcome.own):
            item = store.get(plan.space, own_key(writer, index))
            if item is None or item.value != written(writer, index):
                lost.append(f"writer {writer}'s acknowledged put {index} "
                            f"{'is gone' if item is None else 'came back altered'}")
    return lost


def _contested(store: BaseStore, plan: Writers, done: dict[int, Written]) -> list[str]:
    item = store.get(plan.space, CONTESTED)
    rows = [i for i in store.search(plan.space, limit=10_000) if i.key == CONTESTED]
    problems = [] if len(rows) == 1 else [f"search listed the shared key {len(rows)} times"]
    if item is None:
        return [*problems, "the shared key is gone"]
    value = item.value
    writer, index = value.get("writer"), value.get("i")
    if not isinstance(writer, int) or not isinstance(index, int) \
            or value != written(writer, index):
        return [*problems, f"the shared key holds a torn or foreign value (fields "
                           f"{sorted(value)[:6]})"]
    last = done[writer].contested if writer in done else 0
    if not last - 1 <= index <= last:
        problems.append(f"the shared key holds writer {writer}'s put {index}, older than its "
                        f"last acknowledged put {last - 1}: a later put was lost")
    return problems
