"""Real LangGraph graphs for the tests, with a scripted chat model and no network.

Importable by spawned worker processes: everything here is module level.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import interrupt


@tool
def lookup_order(order: int) -> str:
    """Look up an order's status."""
    return f"order {order} has shipped"


class ScriptedModel(BaseChatModel):
    """A chat model that answers from the conversation it is given, deterministically.

    "order N" makes it call ``lookup_order``; a tool result is summarized; "what
    is my name" is answered from an earlier "my name is X", so a conversation
    resumed in a fresh process shows whether the checkpointer kept it.
    """

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._answer(messages))])

    def _answer(self, messages: list[BaseMessage]) -> AIMessage:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return AIMessage(content=f"Good news: {last.content}.")
        text = str(last.content)
        if order := re.search(r"order (\d+)", text):
            call = {"id": f"call-{len(messages)}", "name": "lookup_order",
                    "args": {"order": int(order.group(1))}}
            return AIMessage(content="", tool_calls=[call])
        if "what is my name" in text.lower():
            names = [m.group(1) for msg in messages if isinstance(msg, HumanMessage)
                     if (m := re.search(r"my name is (\w+)", str(msg.content), re.I))]
            return AIMessage(content=f"Your name is {names[-1]}." if names else "I don't know.")
        return AIMessage(content=f"Noted: {text}")


def agent_graph(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    """A tool-calling agent: model, then tools while the model asks for them."""
    model = ScriptedModel().bind_tools([lookup_order])

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    return agent_loop(agent, [lookup_order], checkpointer)


def agent_loop(agent: Any, tools: list[Any], checkpointer: BaseCheckpointSaver[Any]) -> Any:
    """The agent node, then the tools while its last message asks for them."""
    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


def approval_graph(checkpointer: BaseCheckpointSaver[Any]) -> Any:
    """Draft a refund, ask a human (interrupt), then act on the answer."""

    def draft(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content="Refund 40 EUR for order 123?")]}

    def approve(state: MessagesState) -> dict[str, Any]:
        answer = interrupt({"question": state["messages"][-1].content})
        verdict = "Refund sent." if answer == "yes" else "Refund cancelled."
        return {"messages": [AIMessage(content=verdict)]}

    builder = StateGraph(MessagesState)
    builder.add_node("draft", draft)
    builder.add_node("approve", approve)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "approve")
    builder.add_edge("approve", END)
    return builder.compile(checkpointer=checkpointer)


def texts(state: dict[str, Any]) -> list[str]:
    return [str(m.content) for m in state["messages"]]
