"""A scripted chat model that calls tools: no network, no weights, same answers
every run. It decides from the whole conversation it is given, so what it says
depends on what the agent remembered, which is what the tests are about."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult

_NAME = re.compile(r"\b(?:I'm|I am|my name is|this is)\s+(\w+)", re.IGNORECASE)
_ORDER = re.compile(r"\border(?: number)?(?: is)?\s*#?(\d{5})", re.IGNORECASE)
FACT_PATTERNS = (_NAME, _ORDER)


class ScriptedSupportModel(BaseChatModel):
    """Support replies by rule; tool calls by name, as a tool-calling model makes them."""

    @property
    def _llm_type(self) -> str:
        return "scripted-support"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedSupportModel:
        return self  # its rules name the five tools of support_agent.tools

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=_decide(messages))])


def _decide(messages: list[BaseMessage]) -> AIMessage:
    facts = _recall(messages)
    if isinstance(messages[-1], ToolMessage):
        return AIMessage(_report(messages, facts))
    said = str(messages[-1].content)
    calls = _tool_calls(said.lower(), facts, step=len(messages))
    if calls:
        return AIMessage("", tool_calls=calls)
    return AIMessage(_small_talk(said.lower(), facts, returning=len(messages) > 1))


def _recall(messages: list[BaseMessage]) -> dict[str, str]:
    """The customer's name and order number, from everything they said (and from
    the summary of what they said earlier, a system message first)."""
    facts: dict[str, str] = {}
    for message in messages:
        if isinstance(message, (HumanMessage, SystemMessage)):
            text = str(message.content)
            for key, pattern in (("name", _NAME), ("order", _ORDER)):
                found = pattern.findall(text)
                if found:
                    facts[key] = found[-1]
    return facts


def _tool_calls(said: str, facts: dict[str, str], step: int) -> list[dict[str, Any]]:
    order = facts.get("order")
    if order is None:
        return []

    def call(name: str, **args: str) -> dict[str, Any]:
        return {"id": f"call-{step}-{name}", "name": name, "args": args, "type": "tool_call"}

    if "refund" in said:
        return [call("issue_refund", order=order)]
    if "damaged" in said or "broken" in said:
        return [call("ship_replacement", order=order),
                call("create_ticket", summary=f"damaged delivery, order {order}")]
    if any(word in said for word in ("where", "ship", "arrive", "when")):
        return [call("check_shipment", order=order)]
    if _ORDER.search(said):
        return [call("lookup_order", order=order)]
    return []


def _report(messages: list[BaseMessage], facts: dict[str, str]) -> str:
    """What the tools of the last step found, in a sentence or two."""
    results = []
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        results.insert(0, json.loads(str(message.content)))
    lines = [_sentence(result) for result in results]
    name = facts.get("name")
    return (f"Thanks, {name}. " if name else "") + " ".join(lines)


def _sentence(result: dict[str, str]) -> str:
    if "error" in result:
        return f"I couldn't find that: {result['error']}."
    if "refund" in result:
        return (f"I've issued refund {result['refund']} for order #{result['order']}; it is "
                f"back on your card within {result['days']} days.")
    if "replacement" in result:
        return f"A replacement ({result['replacement']}) arrives {result['eta']}."
    if "ticket" in result:
        return f"I've opened ticket {result['ticket']} so a colleague follows up."
    if "carrier" in result:
        return (f"Order #{result['order']} is {result['status']} with {result['carrier']} "
                f"and arrives {result['eta']}.")
    if "item" in result:
        return f"I found order #{result['order']}: {result['item']}, {result['status']}."
    return f"Order #{result['order']} has {result['status']}."


def _small_talk(said: str, facts: dict[str, str], *, returning: bool) -> str:
    name = facts.get("name")
    if any(phrase in said for phrase in ("my name", "remember me", "who am i")):
        if name is None:
            return "I don't think you've told me your name yet."
        order = f" and your order is #{facts['order']}" if "order" in facts else ""
        return f"Of course: you're {name}{order}."
    if name and returning:
        return f"Welcome back, {name}! How can I help?"
    if name:
        return f"Nice to meet you, {name}. How can I help?"
    return "Hello! How can I help you today?"
