"""Forks LangGraph makes on purpose are never conflicts, and keep their values.

Replay, ``update_state`` on an old checkpoint, ``__copy__`` and a subgraph
resumed from its own checkpoint all put a checkpoint whose parent is not the
latest one; the saver tells them from a second writer by what LangGraph marks
on them. Each test here raised CheckpointConflict (or read wrong values)
before the saver learned those marks.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph

from chatledger.langgraph import AsyncLedgerSaver, CheckpointConflict, LedgerSaver
from tests.langgraph.test_saver import _config, _put


def _add(left: list[str], right: list[str]) -> list[str]:
    return left + right


class _Log(TypedDict):
    log: Annotated[list[str], _add]


def _steps(saver: Any, *names: str) -> Any:
    builder = StateGraph(_Log)
    previous = START
    for name in names:
        builder.add_node(name, lambda state, name=name: {"log": [name]})
        builder.add_edge(previous, name)
        previous = name
    return builder.compile(checkpointer=saver)


def _thread() -> Any:
    return {"configurable": {"thread_id": uuid.uuid4().hex}}


def test_a_copy_of_an_old_checkpoint_is_no_conflict_and_keeps_its_values(url: str) -> None:
    with LedgerSaver.from_url(url) as saver:
        graph, config = _steps(saver, "a", "b", "c"), _thread()
        graph.invoke({"log": []}, config)
        history = list(graph.get_state_history(config))
        after_a = next(s for s in history if s.values.get("log") == ["a"])

        copied = graph.update_state(after_a.config, None, as_node="__copy__")

        state = graph.get_state(copied)
        assert state.values == {"log": ["a"]}  # the copied checkpoint's, not its parent's
        assert state.next == ("b",)
        resumed = graph.invoke(None, copied)
    assert resumed["log"] == ["a", "b", "c"]


def test_a_copy_of_the_first_checkpoint_has_no_parent_and_is_no_conflict(url: str) -> None:
    with LedgerSaver.from_url(url) as saver:
        graph, config = _steps(saver, "a"), _thread()
        graph.invoke({"log": []}, config)
        first = list(graph.get_state_history(config))[-1]
        assert first.parent_config is None

        copied = graph.update_state(first.config, None, as_node="__copy__")

        assert graph.get_state(copied).values == first.values


def test_replay_and_update_from_an_old_checkpoint_fork_on_purpose(url: str) -> None:
    with LedgerSaver.from_url(url) as saver:
        graph, config = _steps(saver, "a", "b"), _thread()
        graph.invoke({"log": []}, config)
        after_a = next(s for s in graph.get_state_history(config) if s.values["log"] == ["a"])

        replayed = graph.invoke(None, after_a.config)
        updated = graph.update_state(after_a.config, {"log": ["edited"]})

        assert replayed["log"] == ["a", "b"]
        assert graph.get_state(updated).values["log"] == ["a", "edited"]


def test_a_stale_writer_through_the_api_is_still_a_conflict(url: str) -> None:
    with LedgerSaver.from_url(url) as saver:
        first = _put(saver, values={"a": 1})
        _put(saver, first, values={"a": 2}, versions={"a": 2})
        with pytest.raises(CheckpointConflict):
            _put(saver, first, values={"a": 3}, versions={"a": 3})  # named only the thread


class _Outer(TypedDict):
    log: Annotated[list[str], _add]


def _with_subgraph(saver: Any) -> Any:
    """A parent whose subgraph keeps its own history (``checkpointer=True``)."""
    inner = StateGraph(_Log)
    inner.add_node("inner", lambda state: {"log": ["inner"]})
    inner.add_edge(START, "inner")
    child = inner.compile(checkpointer=True)
    outer = StateGraph(_Outer)
    outer.add_node("before", lambda state: {"log": ["before"]})
    outer.add_node("child", child)
    outer.add_edge(START, "before")
    outer.add_edge("before", "child")
    return outer.compile(checkpointer=saver)


def test_replaying_a_parent_whose_subgraph_keeps_its_history(url: str) -> None:
    with LedgerSaver.from_url(url) as saver:
        graph, config = _with_subgraph(saver), _thread()
        graph.invoke({"log": []}, config)
        graph.invoke({"log": []}, config)  # the subgraph's history moves on
        first_run = [s for s in graph.get_state_history(config)
                     if s.metadata and s.metadata.get("step") == 1][-1]

        replayed = graph.invoke(None, first_run.config)

    assert replayed["log"][-1] == "inner"


def test_a_subgraph_checkpoint_addressed_directly_is_no_conflict(url: str) -> None:
    with LedgerSaver.from_url(url) as saver:
        graph, config = _with_subgraph(saver), _thread()
        graph.invoke({"log": []}, config)
        sub = [t for t in saver.list(config) if t.config["configurable"]["checkpoint_ns"]]
        assert sub, "the subgraph stored checkpoints of its own"

        oldest = sub[-1].config
        result = graph.invoke(None, oldest)

    assert result is not None


def test_list_before_a_bare_checkpoint_id(saver: LedgerSaver) -> None:
    """LangGraph passes ``before={"configurable": {"checkpoint_id": ...}}``, no thread."""
    first = _put(saver, values={"a": 1})
    second = _put(saver, first, values={"a": 2}, versions={"a": 2})
    before = {"configurable": {"checkpoint_id": second["configurable"]["checkpoint_id"]}}

    listed = [t.config for t in saver.list(_config(), before=before)]

    assert listed == [first]


# -- the async saver: sync calls, and opening ---------------------------------


def test_async_saver_serves_sync_calls_from_other_threads(url: str) -> None:
    async def scenario() -> tuple[Any, Any, list[Any]]:
        async with AsyncLedgerSaver.from_url(url) as saver:
            graph, config = _steps(saver, "a"), _thread()
            await graph.ainvoke({"log": []}, config)
            state = await asyncio.to_thread(graph.get_state, config)
            listed = await asyncio.to_thread(lambda: list(saver.list(config)))
            tuple_ = await asyncio.to_thread(saver.get_tuple, config)
            return state, tuple_, listed

    state, found, listed = asyncio.run(scenario())
    assert state.values == {"log": ["a"]}
    assert found is not None and found.checkpoint["channel_values"]["log"] == ["a"]
    assert len(listed) == 3


def test_async_saver_writes_through_sync_calls_from_other_threads(url: str) -> None:
    async def scenario() -> Any:
        async with AsyncLedgerSaver.from_url(url) as saver:
            first = await asyncio.to_thread(_put, saver, values={"a": 1})
            await asyncio.to_thread(saver.put_writes, first, [("a", 2)], "task")
            await asyncio.to_thread(saver.copy_thread, "t", "u")
            await asyncio.to_thread(saver.prune, ["u"])
            await asyncio.to_thread(saver.delete_for_runs, ["no-such-run"])
            copied = await saver.aget_tuple(_config("u"))
            await asyncio.to_thread(saver.delete_thread, "t")
            return copied, await saver.aget_tuple(_config("t"))

    copied, deleted = asyncio.run(scenario())
    assert copied is not None and copied.pending_writes == [("task", "a", 2)]
    assert deleted is None


def test_a_sync_call_on_the_saver_s_own_loop_says_what_to_do(url: str) -> None:
    async def scenario() -> None:
        async with AsyncLedgerSaver.from_url(url) as saver:
            saver.get_tuple(_config())

    with pytest.raises(asyncio.InvalidStateError, match="await aget_tuple"):
        asyncio.run(scenario())


def test_a_sync_call_after_the_loop_ended_says_what_to_do(url: str) -> None:
    async def opened() -> AsyncLedgerSaver:
        return await AsyncLedgerSaver.from_url(url)

    saver = asyncio.run(opened())
    with pytest.raises(RuntimeError, match="not running"):
        saver.get_tuple(_config())


def test_an_async_saver_made_outside_a_loop_refuses_sync_calls(url: str) -> None:
    from chatledger import open_async_store

    async def store() -> Any:
        return await open_async_store(url)

    saver = AsyncLedgerSaver(asyncio.run(store()))
    with pytest.raises(RuntimeError, match="alist"):
        saver.list(_config())


def test_an_opening_that_fails_closes_nothing() -> None:
    from chatledger import ConfigError

    async def scenario() -> None:
        async with AsyncLedgerSaver.from_url("nosuch://place"):
            pass

    with pytest.raises(ConfigError, match="nosuch"):
        asyncio.run(scenario())
