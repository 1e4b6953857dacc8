"""A store worth inspecting: paged sessions, a conversation with tool calls and a
hostile message, a session with a TTL, a LangGraph thread that forked, and
LangGraph store items (one expired, one hostile)."""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import START, MessagesState, StateGraph

from chatledger import ToolCall, assistant, open_store, system, tool, user
from chatledger.langgraph import LedgerSaver, LedgerStore

NAMESPACE = "support-bot"
HOSTILE = "<script>window.__pwned=1</script> and <img src=x onerror=\"window.__pwned=2\">"
PAGED = [f"user-{n:03d}" for n in range(1, 61)]
THREAD = "order-thread"
CHAT_THREAD = "chat-thread"


def fill(url: str) -> None:
    with open_store(url, namespace=NAMESPACE) as store:
        for session_id in PAGED:
            store.session(session_id).append([user(f"hello from {session_id}")])
        store.session("ada").append(conversation())
        store.session("blocks").append([user([
            "Look at this: ", {"type": "text", "text": "my receipt"},
            {"type": "image", "url": "https://example.com/<receipt>.png"}],
            data=b"\x89PNG")])
        store.session("trojan").append([user("refund \u202eDENIED\u202c\tnow\x1b[2J")])
    with open_store(url, namespace=NAMESPACE, ttl=3600) as store:
        store.session("expiring").append([user("gone within the hour")])
    run_thread(url)
    run_chat_thread(url)
    put_items(url)


def put_items(url: str) -> None:
    """LedgerStore items: two namespaces of one user, a label joined text would
    confuse, an item with a TTL, one that expired (put an hour ago, unswept)."""
    with LedgerStore.from_url(url, namespace=NAMESPACE) as items:
        items.put(("users", "u1", "prefs"), "food", {"likes": "pizza", "score": 4})
        items.put(("users", "u1", "prefs"), "drink", {"likes": "tea"}, ttl=60)
        items.put(("users", "u2"), "note", {"text": HOSTILE})
        items.put(("a:b",), "k", {"text": "a label with a colon"})
    an_hour_ago = lambda: time.time() - 3600  # noqa: E731
    with LedgerStore(open_store(url, namespace=NAMESPACE, clock=an_hour_ago),
                     owns_store=True) as items:
        items.put(("users", "u1", "prefs"), "old", {"likes": "coffee"}, ttl=1)


def conversation() -> list[Any]:
    call = ToolCall(id="call_1", name="lookup_order", args={"order": "123"})
    return [
        system("You are a support agent."),
        user("Where is order 123?"),
        assistant("", tool_calls=[call]),
        tool('{"status": "shipped"}', tool_call_id="call_1"),
        assistant("It has shipped.", metadata={"model": "demo", "tokens": 42}),
        user(HOSTILE, metadata={"note": "</details><script>window.__pwned=3</script>"}),
    ]


class _State(TypedDict):
    count: int
    log: Annotated[list[str], operator.add]


def _step(state: _State) -> dict[str, Any]:
    return {"count": state["count"] + 1, "log": [f"step {state['count'] + 1}"]}


def run_thread(url: str) -> None:
    """Two runs, a fork from the first run's end, and writes still pending."""
    with LedgerSaver.from_url(url, namespace=NAMESPACE) as saver:
        builder = StateGraph(_State)
        builder.add_node("step", _step)
        builder.add_edge(START, "step")
        graph = builder.compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": THREAD}}
        graph.invoke({"count": 0, "log": []}, config)
        first_end = graph.get_state(config).config
        graph.invoke({"count": 10, "log": []}, config)
        forked = graph.update_state(first_end, {"log": ["forked here"]})
        saver.put_writes(forked, [("log", "<b>pending</b>")], task_id="task-pending")


def _agent(state: MessagesState) -> dict[str, Any]:
    """A scripted support agent: a tool call, then the answer it allows."""
    last = state["messages"][-1]
    if isinstance(last, HumanMessage):
        call = {"id": "call_7", "name": "lookup_order", "args": {"order": "123"}}
        return {"messages": [AIMessage("", tool_calls=[call], id="ai-1")]}
    return {"messages": [AIMessage("Order 123 has shipped \U0001f69a.", id="ai-2")]}


def _tools(state: MessagesState) -> dict[str, Any]:
    return {"messages": [ToolMessage('{"status": "shipped"}', tool_call_id="call_7",
                                     id="tool-1")]}


def _route(state: MessagesState) -> str:
    return "tools" if state["messages"][-1].tool_calls else "__end__"  # type: ignore[attr-defined]


def run_chat_thread(url: str, serde: Any = None) -> None:
    """One customer turn through a tool call, as an agent's thread holds it (written
    with ``serde``: None, LangGraph's own serializer)."""
    with LedgerSaver.from_url(url, namespace=NAMESPACE, serde=serde) as saver:
        builder = StateGraph(MessagesState)
        builder.add_node("agent", _agent)
        builder.add_node("tools", _tools)
        builder.add_edge(START, "agent")
        builder.add_conditional_edges("agent", _route)
        builder.add_edge("tools", "agent")
        graph = builder.compile(checkpointer=saver)
        graph.invoke({"messages": [HumanMessage("Where is <order> 123?", id="human-1")]},
                     {"configurable": {"thread_id": CHAT_THREAD}})
