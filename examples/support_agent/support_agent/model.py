"""A scripted chat model that calls tools: no network, no weights, same answers
every run. It decides from the whole conversation it is given, so what it says
depends on what the agent remembered, which is what the tests are about.

A complaint (a refund asked for, an item damaged) is the workflow a support
agent follows: look the order up, check its shipment, decide from the order's
status (delivered: ship a replacement; not delivered yet: refund it), then open
a ticket recording the outcome, one tool call a step, each decided from the
results of the steps before it in this turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
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
_COMPLAINT = ("refund", "damaged", "broken", "money back")


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
    said, results = _this_turn(messages)
    calls = _tool_calls(said.lower(), facts, results, step=len(messages))
    if calls:
        return AIMessage("", tool_calls=calls)
    if results:
        return AIMessage(_report(results, facts))
    return AIMessage(_small_talk(said.lower(), facts, returning=len(messages) > 1))


def _recall(messages: list[BaseMessage]) -> dict[str, str]:
    """The customer's name and order number, from everything they said (and from
    a summary of what they said earlier)."""
    facts: dict[str, str] = {}
    for message in messages:
        if isinstance(message, (HumanMessage, SystemMessage)):
            text = str(message.content)
            for key, pattern in (("name", _NAME), ("order", _ORDER)):
                found = pattern.findall(text)
                if found:
                    facts[key] = found[-1]
    return facts


def _this_turn(messages: list[BaseMessage]) -> tuple[str, dict[str, dict[str, str]]]:
    """What the customer said last, and the tools' results since, by tool name."""
    results: dict[str, dict[str, str]] = {}
    for message in reversed(messages):
        if isinstance(message, ToolMessage):
            results.setdefault(str(message.name), json.loads(str(message.content)))
        elif isinstance(message, HumanMessage):
            return str(message.content), results
    return "", results


def _tool_calls(said: str, facts: dict[str, str], results: dict[str, dict[str, str]],
                step: int) -> list[dict[str, Any]]:
    order = facts.get("order")
    if order is None:
        return []

    def call(name: str, **args: str) -> list[dict[str, Any]]:
        return [{"id": f"call-{step}-{name}", "name": name, "args": args, "type": "tool_call"}]

    if any(word in said for word in _COMPLAINT):
        return _complaint(order, results, call)
    if results:
        return []  # the question was answered by the step before: report it
    if any(word in said for word in ("where", "ship", "arrive", "when")):
        return call("check_shipment", order=order)
    if _ORDER.search(said):
        return call("lookup_order", order=order)
    return []


def _complaint(order: str, results: dict[str, dict[str, str]],
               call: Callable[..., list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The next step of the complaint workflow, from what the steps before found."""
    if "lookup_order" not in results:
        return call("lookup_order", order=order)
    if "error" in results["lookup_order"]:
        return []
    if "check_shipment" not in results:
        return call("check_shipment", order=order)
    remedy = results.get("ship_replacement") or results.get("issue_refund")
    if remedy is None:
        delivered = results["lookup_order"]["status"] == "delivered"
        return call("ship_replacement" if delivered else "issue_refund", order=order)
    if "create_ticket" not in results:
        outcome = (f"replacement {remedy['replacement']}" if "replacement" in remedy
                   else f"refund {remedy['refund']}")
        return call("create_ticket", summary=f"order {order}: {outcome}")
    return []


def _report(results: dict[str, dict[str, str]], facts: dict[str, str]) -> str:
    """What the tools of this turn found, in a sentence or two, in the order they ran."""
    order = ("lookup_order", "check_shipment", "issue_refund", "ship_replacement",
             "create_ticket")
    found = [results[name] for name in order if name in results]
    if len(found) > 1:  # a complaint: its outcome, not every step
        found = [r for r in found if {"refund", "replacement", "ticket"} & r.keys()]
    name = facts.get("name")
    return (f"Thanks, {name}. " if name else "") + " ".join(_sentence(r) for r in found)


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
