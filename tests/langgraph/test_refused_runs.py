"""A run refused with CheckpointConflict says whether its input is in the thread,
so running the turn again never asks the question twice (issue 36, item 2).

Pod A's turn is overtaken by pod B (another saver on the same store), which runs
a whole turn on the thread in the middle of A's:

- after A's first step is stored (B's turn runs inside A's model call): with
  ``durability="sync"`` or ``"async"`` A's question is then in B's history, and
  A's next put is refused with ``input_kept``; with ``"exit"`` A stored nothing;
- right after A's input checkpoint is stored (inside A's put): B's input then
  replaces A's, and A is refused without ``input_kept``.

Deterministic: B runs at those points, not at the mercy of timing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph

from chatledger import RetryPolicy
from chatledger.langgraph import AsyncLedgerSaver, CheckpointConflict, LedgerSaver
from tests.blocking import _the_loop
from tests.langgraph._blocking import BlockingSaver
from tests.langgraph._graphs import texts
from tests.langgraph.conftest import backend_url, saver_matrix

THREAD = "support-7"
CONFIG = {"configurable": {"thread_id": THREAD}}
SPINS = 10_000  # reads of the thread while A's first step is stored in the background
ASKED_ONCE_KEPT = ["hello", "reply to hello", "A turn", "B turn", "reply to B turn"]
ASKED_ONCE_AGAIN = ["hello", "reply to hello", "B turn", "reply to B turn", "A turn",
                    "reply to A turn"]


def _reply(state: MessagesState) -> dict[str, Any]:
    return {"messages": [AIMessage(f"reply to {state['messages'][-1].content}")]}


def _graph(saver: Any, node: Any = _reply) -> Any:
    builder = StateGraph(MessagesState)
    builder.add_node("model", node)
    builder.add_edge(START, "model")
    return builder.compile(checkpointer=saver)


def _step_stored(found: Any) -> bool:
    """A's first step is the latest stored checkpoint: its messages hold A's question."""
    messages = found.checkpoint["channel_values"].get("messages", []) if found else []
    return "A turn" in [m.content for m in messages]


def _overtaken_in_model(saver: Any, other: Any, durability: str) -> Any:
    """A's graph, whose model lets B run a whole turn first (once A's step is stored),
    the first time it is asked "A turn"."""
    overtaken: list[bool] = []

    def first_time(state: MessagesState) -> bool:
        if state["messages"][-1].content != "A turn" or overtaken:
            return False
        overtaken.append(True)
        return True

    def model(state: MessagesState) -> dict[str, Any]:
        if first_time(state):
            for _ in range(SPINS if durability != "exit" else 0):
                if _step_stored(other.get_tuple(CONFIG)):
                    break
            _graph(other).invoke({"messages": [("user", "B turn")]}, CONFIG)
        return _reply(state)

    async def amodel(state: MessagesState) -> dict[str, Any]:
        if first_time(state):
            for _ in range(SPINS if durability != "exit" else 0):
                if _step_stored(await other.aget_tuple(CONFIG)):
                    break
            await _graph(other).ainvoke({"messages": [("user", "B turn")]}, CONFIG)
        return _reply(state)

    return _graph(saver, amodel if isinstance(saver, AsyncLedgerSaver) else model)


class _OvertakenAfterInput(LedgerSaver):
    """Runs B's turn right after storing A's input checkpoint."""

    other: Any = None
    overtaken = False

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        stored = super().put(config, checkpoint, metadata, new_versions)
        if not self.overtaken and metadata.get("source") == "input" and "A turn" in repr(
                checkpoint):
            self.overtaken = True
            _graph(self.other).invoke({"messages": [("user", "B turn")]}, CONFIG)
        return stored


class _AsyncOvertakenAfterInput(AsyncLedgerSaver):
    other: Any = None
    overtaken = False

    async def aput(self, config: Any, checkpoint: Any, metadata: Any,
                   new_versions: Any) -> Any:
        stored = await super().aput(config, checkpoint, metadata, new_versions)
        if not self.overtaken and metadata.get("source") == "input" and "A turn" in repr(
                checkpoint):
            self.overtaken = True
            await _graph(self.other).ainvoke({"messages": [("user", "B turn")]}, CONFIG)
        return stored


def _ask(graph: Any, text: str, durability: str) -> CheckpointConflict | None:
    """The turn as the docs prescribe: refused, it runs again unless its input was kept."""
    def invoke() -> None:
        inputs = {"messages": [("user", text)]}
        if isinstance(graph.checkpointer, AsyncLedgerSaver):
            _the_loop().run(graph.ainvoke(inputs, CONFIG, durability=durability))
        else:
            graph.invoke(inputs, CONFIG, durability=durability)

    try:
        invoke()
    except CheckpointConflict as refused:
        if not getattr(refused, "input_kept", False):  # before issue 36: always ran again
            invoke()
        return refused
    return None


def _asked(saver: Any) -> list[str]:
    graph = _graph(saver)
    if isinstance(saver, AsyncLedgerSaver):
        return texts(_the_loop().run(graph.aget_state(CONFIG)).values)
    return texts(graph.get_state(CONFIG).values)


def _pods(kind: str, url: str, pod_a: type[Any] | None = None) -> tuple[Any, Any, Any]:
    """Savers A and B (sync, or async on the test loop), and what closes them."""
    options = {"retry": RetryPolicy.none()}
    if kind == "sync":
        a, b = (pod_a or LedgerSaver).from_url(url, **options), LedgerSaver.from_url(url, **options)
        return a, b, lambda: (a.close(), b.close())

    async def opened() -> tuple[Any, Any]:
        return (await (pod_a or AsyncLedgerSaver).from_url(url, **options),
                await AsyncLedgerSaver.from_url(url, **options))

    a, b = _the_loop().run(opened())

    async def closed() -> None:
        await a.aclose()
        await b.aclose()

    return a, b, lambda: _the_loop().run(closed())


@pytest.mark.parametrize(("where", "kind", "durability"), saver_matrix(("sync", "async", "exit")))
def test_a_run_overtaken_after_its_first_step_is_not_asked_twice(
        where: str, kind: str, durability: str, request: pytest.FixtureRequest,
        tmp_path: Path) -> None:
    pod_a, pod_b, close = _pods(kind, backend_url(where, request, tmp_path))
    try:
        graph = _overtaken_in_model(pod_a, pod_b, durability)
        _ask(graph, "hello", durability)

        refused = _ask(graph, "A turn", durability)

        asked = _asked(pod_a)
    finally:
        close()
    assert refused is not None
    assert asked.count("A turn") == 1
    if durability == "exit":  # A stored nothing: its turn ran again, after B's
        assert not refused.input_kept and "run the turn again" in str(refused)
        assert asked == ASKED_ONCE_AGAIN
    else:  # B's turn continued from A's first step, A's question in it
        assert refused.input_kept and "do not send that input again" in str(refused)
        assert asked == ASKED_ONCE_KEPT


@pytest.mark.parametrize(("where", "kind", "durability"), saver_matrix(("sync", "async")))
def test_a_run_whose_input_another_run_replaced_is_run_again(
        where: str, kind: str, durability: str, request: pytest.FixtureRequest,
        tmp_path: Path) -> None:
    hooked = _OvertakenAfterInput if kind == "sync" else _AsyncOvertakenAfterInput
    pod_a, pod_b, close = _pods(kind, backend_url(where, request, tmp_path), hooked)
    pod_a.other = pod_b
    try:
        graph = _graph(pod_a)
        _ask(graph, "hello", durability)

        refused = _ask(graph, "A turn", durability)

        asked = _asked(pod_a)
    finally:
        close()
    assert refused is not None and not refused.input_kept
    assert asked == ASKED_ONCE_AGAIN


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_step_whose_run_is_gone_from_the_thread_kept_nothing(kind: str,
                                                               tmp_path: Path) -> None:
    """The thread was deleted and started over meanwhile: the refused run's
    input is in no history, so it is to run again."""
    opener: Any = LedgerSaver if kind == "sync" else BlockingSaver
    with opener.from_url(f"sqlite:///{tmp_path}/l.db") as saver:
        graph = _graph(saver if kind == "sync" else saver.saver)
        _ask(graph, "hello", "sync")
        stale = saver.get_tuple(CONFIG)
        saver.delete_thread(THREAD)
        _ask(graph, "B turn", "sync")
        config = {"configurable": {**stale.config["configurable"],
                                   "__pregel_durability": "sync"}}

        with pytest.raises(CheckpointConflict) as refused:
            saver.put(config, {**stale.checkpoint, "id": f"{stale.checkpoint['id']}-next"},
                      {"source": "loop", "step": 9}, {})
        saver.delete_thread(THREAD)  # and nothing stored since: not another writer's doing
        with pytest.raises(CheckpointConflict) as emptied:
            saver.put(config, {**stale.checkpoint, "id": f"{stale.checkpoint['id']}-last"},
                      {"source": "loop", "step": 9}, {})

    assert not refused.value.input_kept and "run the turn again" in str(refused.value)
    assert "another writer ran this thread" in str(refused.value)
    assert emptied.value.latest is None and "another writer" not in str(emptied.value)
    assert "the namespace holds no checkpoint now: the thread was deleted, expired or lost " \
           "while this run was on it" in str(emptied.value)
