"""Real graphs on the checkpointer: a tool-calling agent across processes, a human in
the loop, and replay from an earlier checkpoint (a deliberate fork, which is allowed)."""

from __future__ import annotations

import asyncio
import multiprocessing
from typing import Any

from langgraph.types import Command

from chatledger.langgraph import AsyncLedgerSaver, LedgerSaver
from tests.langgraph._graphs import agent_graph, approval_graph, texts
from tests.langgraph._workers import converse


def _in_fresh_process(url: str, thread_id: str, text: str) -> list[str]:
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(converse, (url, thread_id, text))


def test_a_tool_calling_conversation_resumes_in_a_fresh_process(shared_url: str) -> None:
    with LedgerSaver.from_url(shared_url) as saver:
        config: Any = {"configurable": {"thread_id": "user-7"}}
        graph = agent_graph(saver)
        graph.invoke({"messages": [("user", "my name is Ada")]}, config)
        state = graph.invoke({"messages": [("user", "where is order 123?")]}, config)
    assert texts(state)[-1] == "Good news: order 123 has shipped."

    later = _in_fresh_process(shared_url, "user-7", "what is my name?")

    assert later[-1] == "Your name is Ada."
    assert later[:2] == ["my name is Ada", "Noted: my name is Ada"]
    assert len(later) == 8  # 2 + user, tool call, tool result, answer + 2


def test_interrupt_and_resume(url: str) -> None:
    with LedgerSaver.from_url(url) as saver:
        graph = approval_graph(saver)
        config: Any = {"configurable": {"thread_id": "refund-1"}}
        first = graph.invoke({"messages": [("user", "refund order 123")]}, config)
        assert first["__interrupt__"][0].value == {"question": "Refund 40 EUR for order 123?"}

    with LedgerSaver.from_url(url) as saver:  # the human answers later, elsewhere
        graph = approval_graph(saver)
        assert graph.get_state(config).next == ("approve",)
        done = graph.invoke(Command(resume="yes"), config)
    assert texts(done)[-1] == "Refund sent."


def test_replay_from_an_earlier_checkpoint_forks_deliberately(url: str) -> None:
    with LedgerSaver.from_url(url) as saver:  # strict: allow_forks is off
        graph = agent_graph(saver)
        config: Any = {"configurable": {"thread_id": "replay"}}
        graph.invoke({"messages": [("user", "my name is Ada")]}, config)
        graph.invoke({"messages": [("user", "my name is Bob")]}, config)
        history = list(graph.get_state_history(config))
        before_bob = next(s for s in history if s.next == ("__start__",)
                          and texts(s.values) == ["my name is Ada", "Noted: my name is Ada"])

        graph.update_state(before_bob.config, {"messages": [("user", "my name is Cy")]})
        replayed = graph.invoke({"messages": [("user", "what is my name?")]}, config)
        forked = graph.invoke(None, before_bob.config)

    assert texts(replayed)[-1] == "Your name is Cy."
    assert texts(forked)[:2] == ["my name is Ada", "Noted: my name is Ada"]


def test_the_async_saver_runs_an_agent(url: str) -> None:
    async def conversation() -> list[str]:
        async with await AsyncLedgerSaver.from_url(url) as saver:
            graph = agent_graph(saver)
            config: Any = {"configurable": {"thread_id": "async-1"}}
            await graph.ainvoke({"messages": [("user", "my name is Ada")]}, config)
            state = await graph.ainvoke({"messages": [("user", "what is my name?")]}, config)
            return texts(state)

    assert asyncio.run(conversation())[-1] == "Your name is Ada."
