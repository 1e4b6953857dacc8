"""Keeping the agent's context small: an extractive summarizer that never drops
a fact the customer gave.

A real deployment would pass a chat model to ``maybe_compact`` (it asks it with
a default prompt that keeps every fact); this one keeps, word for word, every
customer message that states a fact (a name, an order number), so a test can
check that none is lost, and the scripted model reads it like the customer's
own words.
"""

from __future__ import annotations

from chatledger import Message, summary_through

from ..model import FACT_PATTERNS

HEADER = "What the customer told us so far:"


def summarize_facts(messages: list[Message]) -> str:
    """The previous summary's facts, then the facts of ``messages``, one a line."""
    lines: list[str] = []
    for message in messages:
        if summary_through(message) is not None:
            lines += message.text.splitlines()[1:]
        elif message.role == "user" and any(p.search(message.text) for p in FACT_PATTERNS):
            lines.append(message.text)
    return "\n".join([HEADER, *dict.fromkeys(lines)])
