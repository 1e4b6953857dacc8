"""ThreadRuns: one run at a time on a thread, its lease, and the fence on a run that lost it.

In one process, through ``ThreadRuns`` (sync saver) and ``AsyncThreadRuns``
(async saver, on the tests' background loop); a lease's time is the store's
clock, injected. The multi-process tests double-text one thread from spawned
processes with the real clock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from chatledger import ConfigError
from chatledger.langgraph import (
    AsyncLedgerSaver,
    AsyncThreadRuns,
    LeaseLost,
    LedgerSaver,
    ThreadBusy,
    ThreadRuns,
)
from chatledger.langgraph._async.lease import AsyncThreadLease
from chatledger.langgraph._entries import (
    CheckpointEntry,
    Lease,
    NamespaceEntry,
    WritesEntry,
    decode,
)
from chatledger.langgraph._layout import index_session_id, session_id
from chatledger.langgraph._runs import RUN_KEY, RunToken
from chatledger.langgraph._sync.lease import ThreadLease
from tests.blocking import _the_loop
from tests.conftest import FakeClock
from tests.langgraph._graphs import texts
from tests.langgraph._run_workers import calls, counting_graph, double_text, take_and_die
from tests.langgraph.conftest import BACKENDS, backend_url, saver_matrix
from tests.spawned import SpawnedWorkers

THREAD = "customer-42"
CONFIG: Any = {"configurable": {"thread_id": THREAD}}
LEASE = 30.0


def _order(text: str) -> int:
    return int(text.rsplit(maxsplit=1)[-1])


def _turn(text: str) -> list[str]:
    """What one answered turn of the counting graph adds to the thread."""
    order = text.rsplit(maxsplit=1)[-1]
    return [text, "", f"order {order} has shipped", f"Good news: order {order} has shipped."]


class Flavor:
    """The sync saver and ThreadRuns, or the async ones seen through sync calls."""

    def __init__(self, kind: str, url: str, log: Path, clock: FakeClock) -> None:
        self.kind = kind
        self.log = str(log)
        self.loop = _the_loop()
        if kind == "sync":
            self.saver: Any = LedgerSaver.from_url(url, clock=clock)
        else:
            self.saver = self.loop.run(_opened(url, clock))

    def graph(self, pause: Any = None) -> Any:
        return counting_graph(self.saver, self.log, pause)

    def runs(self, graph: Any = None, **options: Any) -> Any:
        kind = ThreadRuns if self.kind == "sync" else AsyncThreadRuns
        return kind(graph or self.graph(), **{"lease": LEASE, **options})

    def invoke(self, runs: Any, text: str, config: Any = CONFIG) -> list[str]:
        message = {"messages": [("user", text)]}
        if self.kind == "sync":
            return texts(runs.invoke(message, config))
        return texts(self.loop.run(runs.ainvoke(message, config)))

    def run_graph(self, graph: Any, text: str, config: Any) -> list[str]:
        message = {"messages": [("user", text)]}
        if self.kind == "sync":
            return texts(graph.invoke(message, config))
        return texts(self.loop.run(graph.ainvoke(message, config)))

    def stream(self, runs: Any, text: str, limit: int | None = None) -> list[Any]:
        message = {"messages": [("user", text)]}
        chunks: list[Any] = []
        if self.kind == "sync":
            for chunk in runs.stream(message, CONFIG):
                chunks.append(chunk)
                if len(chunks) == limit:
                    break
            return chunks

        async def streamed() -> None:
            stream = runs.astream(message, CONFIG)
            async for chunk in stream:
                chunks.append(chunk)
                if len(chunks) == limit:
                    break
            await stream.aclose()

        self.loop.run(streamed())
        return chunks

    @contextmanager
    def hold(self, runs: Any) -> Iterator[Any]:
        if self.kind == "sync":
            with runs.hold(CONFIG) as fenced:
                yield fenced
            return
        held = runs.ahold(CONFIG)
        fenced = self.loop.run(held.__aenter__())
        try:
            yield fenced
        except BaseException as exc:
            if not self.loop.run(held.__aexit__(type(exc), exc, exc.__traceback__)):
                raise
        else:
            self.loop.run(held.__aexit__(None, None, None))

    def take(self, run: str) -> RunToken | Lease:
        """Take the thread's lease as a run that then dies: never renewed, never released."""
        ledger = self.saver._ledger(THREAD, "")
        if self.kind == "sync":
            return ThreadLease(ledger, run).take(LEASE)
        return self.loop.run(AsyncThreadLease(ledger, run).take(LEASE))

    def state(self) -> list[str]:
        values = self.graph().get_state(CONFIG).values
        return texts(values) if values else []

    def entries(self) -> list[Any]:
        """The root namespace session's entries, oldest first."""
        session = self.saver.store.session(session_id(THREAD, ""))
        history = session.read(last=10_000)
        if self.kind == "async":
            history = self.loop.run(history)
        return [decode(session.id, m) for m in history.messages]

    def version(self) -> int:
        session = self.saver.store.session(session_id(THREAD, ""))
        info = session.info() if self.kind == "sync" else self.loop.run(session.info())
        return 0 if info is None else int(info.version)

    def close(self) -> None:
        if self.kind == "sync":
            self.saver.close()
        else:
            self.loop.run(self.saver.aclose())


async def _opened(url: str, clock: FakeClock) -> AsyncLedgerSaver:
    return await AsyncLedgerSaver.from_url(url, clock=clock)


def _open(kind: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path,
          clock: FakeClock) -> Iterator[Flavor]:
    flavor = Flavor(kind, backend_url(backend, request, tmp_path), tmp_path / "calls.log", clock)
    try:
        yield flavor
    finally:
        flavor.close()


@pytest.fixture(params=[case.values for case in saver_matrix() if case.values[0] in BACKENDS],
                ids=lambda p: "-".join(p))
def flavor(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[Flavor]:
    backend, kind = request.param
    yield from _open(kind, backend, request, tmp_path, clock)


def test_reject_refuses_a_second_run_before_its_model_runs_and_stores_nothing(
        flavor: Flavor) -> None:
    runs = flavor.runs(multitask_strategy="reject")
    flavor.invoke(runs, "order 1")
    with flavor.hold(runs):
        made, version = calls(flavor.log), flavor.version()
        with pytest.raises(ThreadBusy, match="multitask_strategy='reject' refused") as caught:
            flavor.invoke(runs, "order 2")
        assert calls(flavor.log) == made  # no model call, no tool call
        assert flavor.version() == version  # nothing stored, not even the input
    assert caught.value.thread_id == THREAD and caught.value.holder is not None
    flavor.invoke(runs, "order 3")  # released: the next run proceeds
    assert flavor.state() == _turn("order 1") + _turn("order 3")
    assert [c for c in calls(flavor.log) if c.startswith("tool")] == ["tool 1", "tool 3"]


def test_enqueue_waits_for_the_first_run_and_runs_on_its_result(
        flavor: Flavor, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = flavor.runs(multitask_strategy="enqueue", wait=60)
    waiting = threading.Event()
    lease_class: Any = ThreadLease if flavor.kind == "sync" else AsyncThreadLease
    take = lease_class.take
    if flavor.kind == "sync":
        def seen(self: Any, seconds: float) -> Any:
            taken = take(self, seconds)
            if isinstance(taken, Lease):
                waiting.set()
            return taken
    else:
        async def seen(self: Any, seconds: float) -> Any:  # type: ignore[misc]
            taken = await take(self, seconds)
            if isinstance(taken, Lease):
                waiting.set()
            return taken
    monkeypatch.setattr(lease_class, "take", seen)
    second: list[Any] = []
    with flavor.hold(runs) as fenced:
        queued = threading.Thread(target=lambda: second.append(flavor.invoke(runs, "order 2")))
        queued.start()
        assert waiting.wait(timeout=60)  # the second run found the thread held
        first = flavor.run_graph(runs.graph, "order 1", fenced)
    queued.join(timeout=120)
    assert first == _turn("order 1")
    assert second == [_turn("order 1") + _turn("order 2")]
    assert [c for c in calls(flavor.log) if c.startswith("tool")] == ["tool 1", "tool 2"]


def test_enqueue_gives_up_after_its_wait_with_a_clear_error(flavor: Flavor) -> None:
    runs = flavor.runs(multitask_strategy="enqueue", wait=0.05)
    with flavor.hold(runs), pytest.raises(ThreadBusy, match="'enqueue' waited") as caught:
        flavor.invoke(runs, "order 2")
    assert caught.value.waited is not None and caught.value.waited >= 0.05
    assert calls(flavor.log) == []
    assert flavor.state() == []


def test_a_dead_holders_lease_expires_and_the_next_run_proceeds(
        flavor: Flavor, clock: FakeClock) -> None:
    runs = flavor.runs(multitask_strategy="reject")
    assert isinstance(flavor.take("dead"), RunToken)
    with pytest.raises(ThreadBusy, match="run dead holds it"):
        flavor.invoke(runs, "order 1")
    clock.advance(LEASE)
    assert flavor.invoke(runs, "order 2") == _turn("order 2")


def test_a_run_paused_past_its_lease_stores_nothing_once_taken_over(
        flavor: Flavor, clock: FakeClock) -> None:
    runs = flavor.runs(multitask_strategy="reject")
    with flavor.hold(runs) as fenced:
        clock.advance(LEASE)  # the holder pauses past its lease
        assert flavor.invoke(runs, "order 2") == _turn("order 2")  # another run takes over
        with pytest.raises(LeaseLost, match="another run took the thread over"):
            flavor.run_graph(runs.graph, "order 1", fenced)  # the holder resumes
    assert calls(flavor.log) == ["model order 2", "tool 2", "model order 2 has shipped"]
    assert flavor.state() == _turn("order 2")
    assert flavor.invoke(runs, "order 3") == _turn("order 2") + _turn("order 3")


def test_a_put_of_a_run_taken_over_mid_step_is_refused(
        flavor: Flavor, clock: FakeClock) -> None:
    """The holder's model call outlives its lease: another run takes the thread
    and answers; the holder's next put is refused, its tool never called."""
    paused: list[bool] = []

    def takeover() -> None:
        if paused:
            return
        paused.append(True)
        clock.advance(LEASE)
        other = threading.Thread(target=lambda: flavor.invoke(flavor.runs(), "order 2"))
        other.start()
        other.join(timeout=120)

    runs = flavor.runs(flavor.graph(pause=takeover))
    with pytest.raises(LeaseLost):
        flavor.invoke(runs, "order 1")
    # The holder's input was stored before the takeover; the other run continued it.
    assert flavor.state() == ["order 1", *_turn("order 2")]
    assert [c for c in calls(flavor.log) if c.startswith("tool")] == ["tool 2"]
    chain = [e for e in flavor.entries() if type(e).__name__ == "CheckpointEntry"]
    assert all(child.parent_id == parent.checkpoint_id for parent, child in pairwise(chain))


def test_writes_a_superseded_run_stores_are_void(flavor: Flavor, clock: FakeClock) -> None:
    runs = flavor.runs()
    flavor.invoke(runs, "order 1")
    latest = flavor.saver.get_tuple(CONFIG).config
    with flavor.hold(runs) as stale:
        write_config = {"configurable": {**latest["configurable"],
                                         RUN_KEY: stale["configurable"][RUN_KEY]}}
        flavor.saver.put_writes(write_config, [("messages", AIMessage("before"))], "early")
        clock.advance(LEASE)
        with flavor.hold(runs) as fresh:
            flavor.saver.put_writes(write_config, [("messages", AIMessage("after"))], "late")
            fresh_config = {"configurable": {**latest["configurable"],
                                             RUN_KEY: fresh["configurable"][RUN_KEY]}}
            flavor.saver.put_writes(fresh_config, [("messages", AIMessage("new"))], "new")
            pending = flavor.saver.get_tuple(latest).pending_writes
    assert [(task, value.content) for task, _, value in pending] == [
        ("early", "before"), ("new", "new")]


def test_the_lease_is_renewed_while_the_run_runs(flavor: Flavor, clock: FakeClock) -> None:
    runs = flavor.runs(lease=0.3)  # renewed every 0.1 s of real time
    with flavor.hold(runs):
        clock.advance(0.2)
        for _ in range(600):  # until a renewal from the new time is stored
            kept = [e for e in flavor.entries() if isinstance(e, Lease) and e.token is not None]
            if kept and kept[-1].until == pytest.approx(clock.now + 0.3):
                break
            threading.Event().wait(0.05)
        else:
            pytest.fail("the lease was never renewed")
        clock.advance(0.2)  # past the lease as first taken, within the renewed one
        with pytest.raises(ThreadBusy):
            flavor.invoke(flavor.runs(lease=0.3), "order 2")


def test_a_stream_holds_the_thread_until_it_ends_or_is_closed(flavor: Flavor) -> None:
    runs = flavor.runs()
    chunks = flavor.stream(runs, "order 1")
    assert [next(iter(c)) for c in chunks] == ["agent", "tools", "agent"]
    assert len(flavor.stream(runs, "order 2", limit=1)) == 1  # left after one step
    assert flavor.invoke(runs, "order 3")[-4:] == _turn("order 3")  # released


@pytest.mark.parametrize("name", ["interrupt", "rollback"])
@pytest.mark.parametrize("kind", [ThreadRuns, AsyncThreadRuns])
def test_interrupt_and_rollback_are_not_offered(name: str, kind: Any) -> None:
    saver: Any = LedgerSaver.from_url("memory://x") if kind is ThreadRuns else None
    graph = counting_graph(saver or AsyncLedgerSaver.__new__(AsyncLedgerSaver), "unused")
    with pytest.raises(ConfigError, match=f"{name!r} is not offered"):
        kind(graph, multitask_strategy=name)


@pytest.mark.parametrize("options", [{"multitask_strategy": "queue"}, {"lease": 0},
                                     {"wait": -1}, {"lease": "60"}, {"lease": float("inf")},
                                     {"lease": float("nan")}, {"wait": float("nan")}])
def test_bad_options_are_refused(options: dict[str, Any]) -> None:
    with LedgerSaver.from_url("memory://x") as saver, pytest.raises(
            ConfigError, match=rf"^{next(iter(options))} must be"):
        ThreadRuns(counting_graph(saver, "unused"), **options)


@pytest.mark.parametrize("kind", [ThreadRuns, AsyncThreadRuns])
def test_a_graph_on_another_checkpointer_is_refused(kind: Any) -> None:
    with pytest.raises(ConfigError, match="needs a graph compiled with"):
        kind(counting_graph(InMemorySaver(), "unused"))


def test_a_run_token_is_checked_when_read() -> None:
    assert RunToken.parse("12@ledger-1") == RunToken(12, "ledger-1")
    with pytest.raises(ValueError, match="not a run token"):
        RunToken.parse("twelve")


@pytest.fixture(params=[case.values for case in saver_matrix()], ids=lambda p: "-".join(p))
def any_flavor(request: pytest.FixtureRequest, tmp_path: Path,
               clock: FakeClock) -> Iterator[Flavor]:
    backend, kind = request.param
    yield from _open(kind, backend, request, tmp_path, clock)


def test_reject_expiry_and_fence_on_every_backend(any_flavor: Flavor, clock: FakeClock) -> None:
    flavor = any_flavor
    runs = flavor.runs(multitask_strategy="reject")
    with flavor.hold(runs) as stale:
        with pytest.raises(ThreadBusy):
            flavor.invoke(runs, "order 1")
        clock.advance(LEASE)
        assert flavor.invoke(runs, "order 2") == _turn("order 2")
        with pytest.raises(LeaseLost):
            flavor.run_graph(runs.graph, "order 3", stale)
    assert flavor.invoke(runs, "order 4") == _turn("order 2") + _turn("order 4")
    assert [c for c in calls(flavor.log) if c.startswith("tool")] == ["tool 2", "tool 4"]


TURNS = 2  # per process; eight processes


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["enqueue", "reject"])
def test_processes_double_texting_one_thread_never_fork_lose_or_repeat(
        strategy: str, shared_url: str, tmp_path: Path, spawned_workers: SpawnedWorkers) -> None:
    log = str(tmp_path / "calls.log")
    outcomes = [outcome for worker in spawned_workers.run(
        double_text, shared_url, THREAD, strategy, TURNS, log, timeout=300) for outcome in worker]

    stored = [text for text, outcome in outcomes if outcome == "stored"]
    assert len(outcomes) == spawned_workers.count * TURNS
    assert len(stored) == len(outcomes) if strategy == "enqueue" else stored
    with LedgerSaver.from_url(shared_url) as saver:
        checkpoints = list(saver.list(CONFIG))
        state = texts(counting_graph(saver, log).get_state(CONFIG).values)
    parents = [c.parent_config["configurable"]["checkpoint_id"] for c in checkpoints
               if c.parent_config]
    assert len(parents) == len(set(parents)) == len(checkpoints) - 1  # one chain, no fork
    turns = [state[i:i + 4] for i in range(0, len(state), 4)]
    assert sorted(turns) == sorted(_turn(text) for text in stored)  # each acknowledged turn, whole
    orders = [_order(turn[0]) for turn in turns]
    for worker in range(spawned_workers.count):  # a process's turns in the order it sent them
        mine = [order for order in orders if order // 100 == worker]
        assert mine == sorted(mine)
    made = calls(log)
    tools = sorted(c for c in made if c.startswith("tool "))
    assert tools == sorted(f"tool {_order(text)}" for text in stored)  # once each, none refused
    assert len(made) == 3 * len(stored)  # two model calls and a tool call per turn, no more


@pytest.mark.slow
def test_a_dead_processs_lease_expires_and_an_enqueued_run_proceeds(
        shared_url: str, tmp_path: Path, spawned_pair: SpawnedWorkers) -> None:
    outcomes = spawned_pair.run(take_and_die, shared_url, THREAD, 1.0, timeout=120)
    assert sorted(outcomes) == ["busy", "taken"]
    with LedgerSaver.from_url(shared_url) as saver:
        graph = counting_graph(saver, str(tmp_path / "calls.log"))
        with pytest.raises(ThreadBusy, match="run dead-"):
            ThreadRuns(graph).invoke({"messages": [("user", "order 1")]}, CONFIG)
        answered = ThreadRuns(graph, multitask_strategy="enqueue", wait=60).invoke(
            {"messages": [("user", "order 2")]}, CONFIG)
    assert texts(answered) == _turn("order 2")


def test_a_threads_first_run_lists_its_namespace_in_the_thread_index(flavor: Flavor) -> None:
    """The run's lease is the root namespace's first entry, before its first put."""
    flavor.invoke(flavor.runs(), "order 1")
    index = flavor.saver.store.session(index_session_id(THREAD))
    history = index.read(last=10)
    if flavor.kind == "async":
        history = flavor.loop.run(history)
    assert [decode(index.id, m) for m in history.messages] == [
        NamespaceEntry("", None, seq=1)]


def test_a_copied_thread_keeps_its_tokens_pointing_at_its_leases(flavor: Flavor) -> None:
    runs = flavor.runs()
    flavor.invoke(runs, "order 1")
    flavor.invoke(runs, "order 2")
    flavor.saver.copy_thread(THREAD, "copy")
    session = flavor.saver.store.session(session_id("copy", ""))
    history = session.read(last=1000)
    if flavor.kind == "async":
        history = flavor.loop.run(history)
    entries = {m.seq: decode(session.id, m) for m in history.messages}
    runs_of = {e.run for e in entries.values() if isinstance(e, (CheckpointEntry, WritesEntry))}
    assert len(runs_of) == 2
    assert all(isinstance(entries[run], Lease) and entries[run].token is None
               for run in runs_of if run is not None)
    copy = {"configurable": {"thread_id": "copy"}}
    assert flavor.invoke(runs, "order 3", copy) == _turn("order 1") + _turn("order 2") + _turn(
        "order 3")


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_create_agent_agent_runs_one_run_at_a_time(kind: str, tmp_path: Path,
                                                    request: pytest.FixtureRequest,
                                                    clock: FakeClock) -> None:
    from langchain.agents import create_agent

    from tests.langgraph._graphs import ScriptedModel, lookup_order

    for flavor in _open(kind, "sqlite", request, tmp_path, clock):
        agent = create_agent(ScriptedModel(), tools=[lookup_order],
                             checkpointer=flavor.saver)
        runs = flavor.runs(agent, multitask_strategy="reject")
        assert flavor.invoke(runs, "order 7") == _turn("order 7")
        with flavor.hold(runs), pytest.raises(ThreadBusy):
            flavor.invoke(runs, "order 8")
        assert flavor.invoke(runs, "order 9")[-4:] == _turn("order 9")


def test_a_run_must_name_its_thread(flavor: Flavor) -> None:
    with pytest.raises(ValueError, match="thread_id"):
        flavor.invoke(flavor.runs(), "order 1", {"configurable": {}})


def _moved_on(read: Any, session: Any, kind: str) -> Any:
    """``read``, and something else stored right after it."""
    from chatledger import system

    def sync_read() -> Any:
        found = read()
        session.append([system("meddled")])
        return found

    async def async_read() -> Any:
        found = await read()
        await session.append([system("meddled")])
        return found

    return sync_read if kind == "sync" else async_read


@pytest.fixture(params=["sync", "async"])
def memory_flavor(request: pytest.FixtureRequest, tmp_path: Path,
                  clock: FakeClock) -> Iterator[Flavor]:
    yield from _open(request.param, "memory", request, tmp_path, clock)


def test_a_lease_operation_that_always_finds_the_thread_moved_on_gives_up(
        memory_flavor: Flavor, clock: FakeClock) -> None:
    """Something is stored between every read and append: taking raises
    ConflictError after its attempts, keeping and releasing answer False."""
    from chatledger import ConflictError

    flavor = memory_flavor
    ledger = flavor.saver._ledger(THREAD, "")
    lease: Any = (ThreadLease if flavor.kind == "sync" else AsyncThreadLease)(ledger, "run")
    call: Any = (lambda done: done) if flavor.kind == "sync" else flavor.loop.run
    token = call(lease.take(LEASE))
    assert isinstance(token, RunToken)
    lease.latest = _moved_on(lease.latest, ledger.session, flavor.kind)
    assert call(lease.keep(token, LEASE)) is False
    assert call(lease.release(token)) is False
    clock.advance(LEASE)
    with pytest.raises(ConflictError):
        call(lease.take(LEASE))
