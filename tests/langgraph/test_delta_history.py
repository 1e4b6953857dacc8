"""``get_delta_channel_history`` (LangGraph's beta DeltaChannel) read in one walk.

The oracle is LangGraph's own default implementation, which walks the parent
chain through ``get_tuple``: for every checkpoint of threads that grew, forked
and were edited, ours returns exactly what it returns.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, StateGraph

from chatledger.langgraph import AsyncLedgerSaver, LedgerSaver

CHANNELS = ["log", "plain", "missing"]


def _append(current: list[str] | None, writes: Sequence[Any]) -> list[str]:
    out = list(current or [])
    for write in writes:
        out.extend(write if isinstance(write, list) else [write])
    return out


def _add(left: list[str], right: list[str]) -> list[str]:
    return left + right


class _State(TypedDict):
    log: Annotated[list[str], DeltaChannel(_append, snapshot_frequency=3)]
    plain: Annotated[list[str], _add]


def _graph(saver: Any) -> Any:
    builder = StateGraph(_State)
    builder.add_node("a", lambda state: {"log": ["a"], "plain": ["a"]})
    builder.add_node("b", lambda state: {"log": ["b"], "plain": ["b"]})
    builder.add_edge(START, "a")
    builder.add_edge("a", "b")
    return builder.compile(checkpointer=saver)


def _grow_fork_and_edit(graph: Any, config: Any) -> None:
    for turn in range(4):
        graph.invoke({"log": [f"in-{turn}"], "plain": [f"in-{turn}"]}, config)
    old = list(graph.get_state_history(config))[5]
    graph.invoke({"log": ["forked"], "plain": ["forked"]}, old.config)
    graph.update_state(config, {"log": ["edit"], "plain": ["edit"]})


def test_delta_history_matches_langgraph_s_own_walk_at_every_checkpoint(url: str) -> None:
    with LedgerSaver.from_url(url) as saver:
        graph, config = _graph(saver), {"configurable": {"thread_id": uuid.uuid4().hex}}
        _grow_fork_and_edit(graph, config)
        checked = 0
        for found in saver.list(config):
            ours = saver.get_delta_channel_history(config=found.config, channels=CHANNELS)
            oracle = BaseCheckpointSaver.get_delta_channel_history(
                saver, config=found.config, channels=CHANNELS)
            assert ours == oracle, found.config
            checked += 1
        assert graph.get_state(config).values["log"] == graph.get_state(config).values["plain"]
    assert checked > 15
    assert saver.get_delta_channel_history(config=config, channels=[]) == {}


def test_delta_history_of_an_unknown_checkpoint_is_empty(url: str) -> None:
    with LedgerSaver.from_url(url) as saver:
        config = {"configurable": {"thread_id": "none", "checkpoint_id": "nope"}}
        assert saver.get_delta_channel_history(config=config, channels=["log"]) == {
            "log": {"writes": []}}


def test_async_delta_history_and_its_sync_bridge(url: str) -> None:
    async def scenario() -> tuple[Any, Any, Any]:
        async with AsyncLedgerSaver.from_url(url) as saver:
            graph = _graph(saver)
            config = {"configurable": {"thread_id": uuid.uuid4().hex}}
            for turn in range(3):
                await graph.ainvoke({"log": [f"in-{turn}"], "plain": [f"in-{turn}"]}, config)
            ours = await saver.aget_delta_channel_history(config=config, channels=CHANNELS)
            oracle = await BaseCheckpointSaver.aget_delta_channel_history(
                saver, config=config, channels=CHANNELS)
            bridged = await asyncio.to_thread(
                lambda: saver.get_delta_channel_history(config=config, channels=CHANNELS))
            return ours, oracle, bridged

    ours, oracle, bridged = asyncio.run(scenario())
    assert ours == oracle == bridged
    assert ours["log"]["writes"]
