"""The demo's customer-support agent: rule-based, so the demo needs no model,
and every reply depends on what the agent remembers of the conversation."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from .._messages import Message

_NAME = re.compile(r"\b(?:I'm|I am|my name is|this is)\s+([A-Z][a-z]+)")
_ORDER = re.compile(r"\border(?: number)?(?: is)?\s*#?(\d{3,})", re.IGNORECASE)


@dataclass(frozen=True)
class Memory:
    """What the agent knows about the customer, recalled from the history."""

    name: str | None = None
    order: str | None = None


def recall(history: Iterable[Message]) -> Memory:
    """Read the facts the customer gave, latest first wins."""
    name = order = None
    for message in history:
        if message.role != "user":
            continue
        name = _last_match(_NAME, message.text) or name
        order = _last_match(_ORDER, message.text) or order
    return Memory(name, order)


def reply(history: list[Message], said: str) -> str:
    """The agent's answer to ``said``, given the earlier ``history``."""
    memory = recall([*history, Message(role="user", content=said)])
    who = f", {memory.name}" if memory.name else ""
    text = said.lower()
    if "refund" in text:
        if memory.order is None:
            return f"I can help with a refund{who}. What is your order number?"
        return (f"Of course{who}. I've opened refund R-{memory.order} for order "
                f"#{memory.order}; the money is back on your card within 5 days.")
    if "ship" in text or "arrive" in text:
        if memory.order is None:
            return f"Happy to check{who}. What is your order number?"
        return f"Order #{memory.order} shipped yesterday and should arrive on Friday{who}."
    if memory.order and _last_match(_ORDER, said):
        return f"Thanks{who}! I found order #{memory.order}. How can I help with it?"
    return f"Nice to meet you{who}. How can I help?" if memory.name else "How can I help?"


def _last_match(pattern: re.Pattern[str], text: str) -> str | None:
    found = pattern.findall(text)
    return found[-1] if found else None
