"""The LangChain history's, the LangGraph checkpointer's and LedgerStore's store calls are
spans inside the caller's trace: children of the span the caller had open."""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage
from opentelemetry import trace

from chatledger import open_async_store, open_store
from chatledger.langchain import ChatLedgerHistory
from chatledger.langgraph import AsyncLedgerSaver, AsyncLedgerStore, LedgerSaver, LedgerStore
from tests.langgraph._graphs import agent_graph
from tests.telemetry.conftest import Telemetry, flat

SECRET = "my card number is 4111"


def _under(telemetry: Telemetry, parent: trace.Span) -> set[str]:
    """The operations of the spans that are children of ``parent``."""
    spans = telemetry.spans()
    assert spans, "no store span was recorded"
    context = parent.get_span_context()
    assert {span.context.trace_id for span in spans} == {context.trace_id}
    assert {span.parent.span_id if span.parent else None for span in spans} == {context.span_id}
    assert SECRET not in flat(spans)
    return {str(dict(span.attributes or {})["db.operation.name"]) for span in spans}


def test_the_langchain_history_calls_nest_under_the_callers_span(
    telemetry: Telemetry, tracer: trace.Tracer
) -> None:
    with open_store("memory://", namespace=telemetry.namespace, tracing=True) as store:
        history = ChatLedgerHistory(store, "user-42")
        with tracer.start_as_current_span("chain") as chain:
            history.add_messages([HumanMessage(SECRET), AIMessage("noted")])
            assert [m.content for m in history.messages] == [SECRET, "noted"]
    assert _under(telemetry, chain) >= {"append", "read"}


def test_the_langgraph_checkpointer_calls_nest_under_the_callers_span(
    telemetry: Telemetry, tracer: trace.Tracer
) -> None:
    with open_store("memory://", namespace=telemetry.namespace, tracing=True) as store:
        graph = agent_graph(LedgerSaver(store))
        config: Any = {"configurable": {"thread_id": "t1"}}
        with tracer.start_as_current_span("agent") as agent:
            graph.invoke({"messages": [("user", SECRET)]}, config)
    assert "append" in _under(telemetry, agent)


async def _ainvoke(telemetry: Telemetry, tracer: trace.Tracer) -> trace.Span:
    async with await open_async_store("memory://", namespace=telemetry.namespace,
                                      tracing=True) as store:
        graph = agent_graph(AsyncLedgerSaver(store))
        config: Any = {"configurable": {"thread_id": "t1"}}
        with tracer.start_as_current_span("agent") as agent:
            await graph.ainvoke({"messages": [("user", SECRET)]}, config)
        return agent


def test_the_async_checkpointer_calls_nest_under_the_callers_span(
    telemetry: Telemetry, tracer: trace.Tracer
) -> None:
    agent = asyncio.run(_ainvoke(telemetry, tracer))
    assert "append" in _under(telemetry, agent)


def test_the_langgraph_store_calls_nest_under_the_callers_span(
    telemetry: Telemetry, tracer: trace.Tracer
) -> None:
    with open_store("memory://", namespace=telemetry.namespace, tracing=True) as store:
        items = LedgerStore(store)
        with tracer.start_as_current_span("tool") as tool:
            items.put(("users", "u1"), "card", {"text": SECRET})
            assert items.get(("users", "u1"), "card").value == {"text": SECRET}  # type: ignore[union-attr]
            assert [i.key for i in items.search(("users",))] == ["card"]
            items.delete(("users", "u1"), "card")
    assert _under(telemetry, tool) == {"append", "read", "heads", "delete"}
    targets = {str(dict(s.attributes or {}).get("chatledger.session.id"))
               for s in telemetry.spans()}
    assert "lgs/users/u1/=card" in targets  # the item, named as its session


def test_the_async_langgraph_store_calls_nest_under_the_callers_span(
    telemetry: Telemetry, tracer: trace.Tracer
) -> None:
    async def run() -> trace.Span:
        async with await open_async_store("memory://", namespace=telemetry.namespace,
                                          tracing=True) as store:
            items = AsyncLedgerStore(store)
            with tracer.start_as_current_span("tool") as tool:
                await items.aput(("users", "u1"), "card", {"text": SECRET})
                assert (await items.aget(("users", "u1"), "card")) is not None
            return tool

    tool = asyncio.run(run())
    assert _under(telemetry, tool) == {"append", "read"}
