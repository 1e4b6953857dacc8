"""The workload of ``check_checkpointer``: a chat graph, who runs which turn on which
thread, and the rendezvous that makes the runs of one round race.

Everything a spawned process needs is defined at module level, so that the
``spawn`` start method can import it.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import multiprocessing
import operator
import random
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, cast

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from ._checkpointer_report import Turn, TurnOutcome
from ._concurrency import WorkerError, _collect, _unreported, reap
from ._records import describe_error

__all__ = ["Plan", "Race", "Step", "chat_graph", "make_plan", "opened", "opened_as", "resolve",
           "run_in_threads", "run_in_processes", "run_turns"]

Factory = Callable[[str], Any]
Refusals = tuple[type[BaseException], ...]
Outcomes = dict[int, tuple[list[Turn], WorkerError | None]]
# How long a worker thread released from a rendezvous at the deadline has to
# record why it stopped; one that takes longer is hung elsewhere.
_LAST_WORDS = 1.0


class ChatState(TypedDict):
    items: Annotated[list[str], operator.add]


def _answer(state: ChatState) -> dict[str, list[str]]:
    # The answer is derived from the state the run read: a run that started from
    # a stale or mixed state answers something else, which the check then sees.
    return {"items": [state["items"][-1].replace("question", "answer")]}


def chat_graph(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    """START -> answer -> END over a list channel: the input step appends the
    question, the answer node the reply, so a turn is two supersteps (two puts
    under ``sync`` and ``async``, one at the end under ``exit``)."""
    builder = StateGraph(ChatState)
    builder.add_node("answer", _answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=checkpointer)


@dataclass(frozen=True)
class Step:
    """One turn of one process: which thread, under which durability mode."""

    round: int
    durability: str
    thread_id: str
    new_thread: bool


@dataclass(frozen=True)
class Plan:
    """Every process's steps, in order; every process has one step per round."""

    steps: tuple[tuple[Step, ...], ...]
    threads: tuple[tuple[str, str], ...]  # (thread_id, durability), in first-use order

    @property
    def processes(self) -> int:
        return len(self.steps)


def make_plan(run_id: str, *, processes: int, turns: int, threads: int, thread_rounds: int,
              durabilities: Sequence[str], seed: int) -> Plan:
    """Deal the processes over ``threads`` slots each round, reshuffled so pairs change.

    A slot's thread lives ``thread_rounds`` rounds, then the slot starts a new
    one; slots are staggered, so each round some processes start a new thread
    together while others advance an existing one.
    """
    rng = random.Random(seed)
    steps: list[list[Step]] = [[] for _ in range(processes)]
    for durability in durabilities:
        for round_ in range(turns):
            for position, process in enumerate(rng.sample(range(processes), processes)):
                slot = position % threads
                generation, age = divmod(round_ + slot, thread_rounds)
                thread_id = f"{run_id}-{durability}-{slot}-{generation}"
                steps[process].append(Step(round_, durability, thread_id,
                                           new_thread=round_ == 0 or age == 0))
    used = dict.fromkeys((s.thread_id, s.durability)
                         for rounds in zip(*steps, strict=True) for s in rounds)
    return Plan(tuple(tuple(s) for s in steps), tuple(used))


def resolve(factory: str | Factory) -> Factory:
    """A callable as is; ``"package.module:Class.method"`` imported."""
    if not isinstance(factory, str):
        return factory
    module, _, name = factory.partition(":")
    if not module or not name:
        raise ValueError(f"factory {factory!r} is not 'module:callable'")
    found: Any = importlib.import_module(module)
    for attribute in name.split("."):
        found = getattr(found, attribute)
    if not callable(found):
        raise TypeError(f"factory {factory!r} is not callable")
    return found  # type: ignore[no-any-return]


@contextlib.contextmanager
def opened_as(factory: Factory, target: str, kind: type) -> Iterator[Any]:
    """What the factory returns, or what its context manager yields
    (``SqliteSaver.from_conn_string``), refused unless a ``kind``; closed on exit
    either way. Untyped: ``kind`` may be abstract (BaseStore), which ``type[T]``
    refuses, so the wrappers type what comes out."""
    _check_callable_with_target(factory, kind)
    made = factory(target)
    if hasattr(made, "__aenter__") and not hasattr(made, "__enter__"):
        raise TypeError(f"the factory gave an async context manager "
                        f"({type(made).__name__}): the check runs sync {kind.__name__}s; "
                        "give the sync class's factory (SqliteSaver.from_conn_string, not "
                        "AsyncSqliteSaver's)")
    with made if hasattr(made, "__enter__") else contextlib.nullcontext(made) as found:
        if not isinstance(found, kind):
            raise TypeError(f"the factory gave {type(found).__name__}, "
                            f"not a langgraph {kind.__name__}")
        yield found


def _check_callable_with_target(factory: Factory, kind: type) -> None:
    """Refuse a factory that cannot take the target (a class whose constructor takes
    nothing, as InMemorySaver's), in the check's terms rather than the call's."""
    try:
        inspect.signature(factory).bind("target")
    except ValueError:  # no signature to read (a builtin): the call will tell
        return
    except TypeError:
        name = getattr(factory, "__qualname__", type(factory).__name__)
        raise TypeError(f"the factory {name} is called with the target (a URL or a path), "
                        f"and takes no such argument: give a callable that does, e.g. "
                        f"lambda target: {name}() for a {kind.__name__} that needs "
                        "none") from None


def opened(factory: Factory, target: str,
           ) -> contextlib.AbstractContextManager[BaseCheckpointSaver[Any]]:
    """The saver the factory makes, as :func:`opened_as` opens it."""
    return opened_as(factory, target, BaseCheckpointSaver)


class Rendezvous:
    """Holds each run of a round, right after it read its thread's latest checkpoint,
    until every run of the round has: the widest race window two pods can hit.

    Each worker waits exactly twice per round (at its start, and after reading,
    or after a turn that raised before reading), so the barrier's count always
    matches.
    """

    def __init__(self, barrier: Any, deadline: float) -> None:
        self._barrier, self._deadline = barrier, deadline
        self._armed = threading.local()

    @contextlib.contextmanager
    def installed(self, saver: BaseCheckpointSaver[Any]) -> Iterator[None]:
        read = saver.get_tuple

        def get_tuple(config: Any) -> Any:
            found = read(config)
            self.arrive()
            return found

        # An instance attribute shadows the method for LangGraph's loop (and
        # survives the shallow copies LangGraph makes of a saver).
        saver.get_tuple = get_tuple  # type: ignore[method-assign]
        try:
            yield
        finally:
            del saver.get_tuple

    def begin_round(self) -> None:
        """Wait until every worker has ended the last round, then arm the rendezvous.

        Without it, a worker whose turn was refused early would read its next
        thread while another still writes it, and race that writer instead.
        """
        self._wait()
        self._armed.on = True

    def arrive(self) -> None:
        if getattr(self._armed, "on", False):
            self._armed.on = False
            self._wait()

    def _wait(self) -> None:
        self._barrier.wait(max(0.0, self._deadline - time.monotonic()))


@dataclass(frozen=True)
class Race:
    """What every worker of a check shares: the checkpointer, the refusals, the time bound."""

    factory: str | Factory
    target: str
    refusals: Refusals
    timeout: float


def run_turns(process: int, graph: Any, steps: Sequence[Step], *, rendezvous: Rendezvous,
              refusals: Refusals, into: list[Turn]) -> None:
    """Every step of one process, each turn recorded in ``into`` as it ends."""
    for step in steps:
        into.append(_turn(process, graph, step, rendezvous, refusals))


def _turn(process: int, graph: Any, step: Step, rendezvous: Rendezvous,
          refusals: Refusals) -> Turn:
    question = f"p{process} r{step.round} question"
    config = {"configurable": {"thread_id": step.thread_id}}
    outcome: TurnOutcome = "acknowledged"
    error = ""
    rendezvous.begin_round()
    started = time.monotonic()
    try:
        graph.invoke({"items": [question]}, config, durability=step.durability)
    except threading.BrokenBarrierError:
        raise  # another worker failed or the run's time is up: this worker stops too
    except refusals as exc:
        outcome, error = "refused", describe_error(exc)
    except Exception as exc:
        outcome, error = "error", describe_error(exc)
    rendezvous.arrive()
    return Turn(process, step.round, step.durability, step.thread_id, step.new_thread,
                outcome, question, question.replace("question", "answer"), error,
                time.monotonic() - started)


def process_main(process: int, steps: Sequence[Step], race: Race, barrier: Any,
                 results: Any) -> None:
    """One spawned process: its own saver on the shared target, its steps, its report."""
    turns: list[Turn] = []
    failure = None
    rendezvous = Rendezvous(barrier, time.monotonic() + race.timeout)
    try:
        with opened(resolve(race.factory), race.target) as saver, rendezvous.installed(saver):
            run_turns(process, chat_graph(saver), steps, rendezvous=rendezvous,
                      refusals=race.refusals, into=turns)
    except BaseException as exc:
        failure = _failure(process, exc, race.timeout)
        barrier.abort()  # the others stop at their next round instead of waiting it out
    results.put((process, turns, failure))


def _failure(process: int, exc: BaseException, timeout: float) -> WorkerError:
    if isinstance(exc, threading.BrokenBarrierError):
        return WorkerError(process, f"stopped at a rendezvous: another worker failed, or the "
                                    f"run's timeout of {timeout} s passed")
    return WorkerError(process, describe_error(exc), traceback.format_exc())


def run_in_threads(saver: BaseCheckpointSaver[Any], plan: Plan, refusals: Refusals,
                   timeout: float) -> tuple[list[Turn], list[WorkerError]]:
    """Every process's steps in a thread of this process, on one shared saver."""
    deadline = time.monotonic() + timeout
    barrier = threading.Barrier(plan.processes)
    rendezvous = Rendezvous(barrier, deadline)
    turns: list[list[Turn]] = [[] for _ in plan.steps]
    failures: dict[int, WorkerError] = {}

    def work(process: int) -> None:
        try:
            run_turns(process, chat_graph(saver), plan.steps[process], rendezvous=rendezvous,
                      refusals=refusals, into=turns[process])
        except BaseException as exc:
            failures[process] = _failure(process, exc, timeout)
            barrier.abort()

    with rendezvous.installed(saver):
        workers = [threading.Thread(target=work, args=(index,), daemon=True,
                                    name=f"chatledger-checkpointer-{index}")
                   for index in range(plan.processes)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        barrier.abort()  # whoever still waits at a rendezvous stops now, and says so
        for index, worker in enumerate(workers):
            worker.join(_LAST_WORDS)
            if worker.is_alive():  # its call runs on, and Python waits for it at exit
                failures[index] = WorkerError(
                    index, f"still running after {timeout} s (a thread cannot be stopped: "
                           "mode='processes' kills a worker that hangs)")
    return [t for ts in turns for t in ts], [failures[i] for i in sorted(failures)]


def run_in_processes(race: Race, plan: Plan) -> tuple[list[Turn], list[WorkerError]]:
    """Every process's steps in a spawned process of its own, each with its own saver."""
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(plan.processes), context.Queue()
    children = [context.Process(target=process_main, daemon=True,
                                args=(index, steps, race, barrier, results),
                                name=f"chatledger-checkpointer-{index}")
                for index, steps in enumerate(plan.steps)]
    for child in children:
        child.start()
    outcomes: Outcomes = {}
    try:
        # The same collection as run_concurrently's; what comes back are Turns.
        outcomes = cast(Outcomes, _collect(results, children, time.monotonic() + race.timeout))
    finally:
        reap(children, reported=outcomes.keys())
    failures = [error for i in sorted(outcomes) if (error := outcomes[i][1]) is not None]
    failures += [_unreported(i, child, race.timeout) for i, child in enumerate(children)
                 if i not in outcomes]
    return [turn for i in sorted(outcomes) for turn in outcomes[i][0]], failures
