"""Turns in a process of their own, for either version of the agent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chatledger import Store, open_store


def run_turns(make_agent: Callable[[Store], Any], argv: list[str]) -> int:
    """``argv`` is ``URL CUSTOMER MESSAGE...``: open the store, let the agent made
    on it answer each message, print one answer a line."""
    url, customer, *messages = argv
    with open_store(url) as store:
        agent = make_agent(store)
        for text in messages:
            print(agent.handle(customer, text), flush=True)
    return 0
