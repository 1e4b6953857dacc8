"""The three failures that made support bots forget in production, reproduced on
the create_agent stack and shown caught.

1. Memory lost: a private Redis restarted empty (no persistence). The turn
   states the checkpoint the service last saw, so it raises ``CheckpointLost``
   instead of greeting a returning customer as new.
2. Two requests for one customer at once (a double text, two pods): they
   follow the agent's ``multitask_strategy``: ``reject`` refuses the second
   before any model or tool call, ``enqueue`` runs it after the first, on its
   result; no tool call is made twice.
3. Odd characters: emoji and right-to-left text come back exactly (see
   test_agent.py); a lone surrogate (what a broken client sends) is refused
   with ``InvalidStateValue`` and nothing of the turn is stored.

The tests that take ``ledger_url`` or ``ledger_store`` run on every store the
plugin is given (``--chatledger-url``); the restart needs the plugin's private
Redis (``ledger_faults``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from support_agent.agent import SupportAgent
from support_agent.tickets import TicketingService

from chatledger import RetryPolicy, Store, open_store
from chatledger.langgraph import CheckpointLost, InvalidStateValue, ThreadBusy
from chatledger.langgraph._entries import Lease  # the spy below: see _seen_waiting
from chatledger.langgraph._sync.lease import ThreadLease
from chatledger.testing import LedgerFaults

HELLO = "Hi, I'm Dana and my order number is 48213."
REFUND = "I'd like a refund please"
REFUNDED = [("lookup_order", "48213"), ("check_shipment", "48213"), ("issue_refund", "48213"),
            ("create_ticket", "order 48213: refund R-48213")]


# Restarting the server is the fault here, not slowness: the production timeouts.
@pytest.mark.chatledger(options={"timeout": 5.0, "retry": RetryPolicy(deadline=10.0)})
def test_memory_lost_in_a_redis_restart_is_loud(ledger_store: Store,
                                                ledger_faults: LedgerFaults) -> None:
    service = TicketingService()
    agent = SupportAgent(ledger_store, service)
    agent.handle("dana", HELLO)
    agent.handle("dana", "When will it arrive?")
    ledger_faults.restart(empty=True)  # no persistence: the conversation is gone
    calls = list(service.calls)
    with pytest.raises(CheckpointLost) as caught:
        agent.handle("dana", REFUND)
    assert (caught.value.thread_id, caught.value.found_checkpoint) == ("dana", None)
    assert caught.value.expected_checkpoint == agent.known["dana"]
    assert service.calls == calls  # nothing ran: no refund to a stranger
    # What the service would have said without stating what it knew:
    forgetful = SupportAgent(ledger_store, service)
    assert forgetful.handle("dana", "Hi, it's me again") == "Hello! How can I help you today?"


class HeldService(TicketingService):
    """The ticketing service, whose first order lookup waits until the test lets it go:
    a request in flight, at a moment the test chooses."""

    def __init__(self) -> None:
        super().__init__()
        self.inside = threading.Event()
        self.release = threading.Event()

    def lookup_order(self, order: str) -> dict[str, str]:
        if not self.inside.is_set():
            self.inside.set()
            assert self.release.wait(timeout=120)
        return super().lookup_order(order)


@pytest.fixture
def pods(ledger_url: str) -> Iterator[tuple[Store, Store]]:
    """Two processes' stores on one backend, as two pods of the service have."""
    with open_store(ledger_url) as one, open_store(ledger_url) as two:
        yield one, two


def test_reject_refuses_the_second_request_before_any_tool_call(
        pods: tuple[Store, Store]) -> None:
    service = HeldService()
    first, second = (SupportAgent(store, service, multitask_strategy="reject") for store in pods)
    answers: list[str] = []
    running = threading.Thread(target=lambda: answers.append(first.handle("dana", HELLO)))
    running.start()
    assert service.inside.wait(timeout=120)  # the first request is in its lookup
    made = list(service.calls)
    with pytest.raises(ThreadBusy):
        second.handle("dana", "Where is it?")
    assert service.calls == made  # the second made no model or tool call
    service.release.set()
    running.join(timeout=120)
    assert answers == ["Thanks, Dana. I found order #48213: a blue kettle, shipped."]
    assert second.handle("dana", REFUND).startswith("Thanks, Dana. I've issued refund R-48213")
    assert service.calls == [("lookup_order", "48213"), *REFUNDED]  # each once


def test_enqueue_runs_the_second_request_after_the_first_on_its_result(
        pods: tuple[Store, Store], monkeypatch: pytest.MonkeyPatch) -> None:
    service = HeldService()
    first, second = (SupportAgent(store, service, multitask_strategy="enqueue")
                     for store in pods)
    waiting = _seen_waiting(monkeypatch)
    answers: dict[str, str] = {}
    running = threading.Thread(target=lambda: answers.update(first=first.handle("dana", HELLO)))
    running.start()
    assert service.inside.wait(timeout=120)
    queued = threading.Thread(target=lambda: answers.update(second=second.handle("dana", REFUND)))
    queued.start()
    assert waiting.wait(timeout=120)  # the second found the thread held, and waits
    service.release.set()
    running.join(timeout=120)
    queued.join(timeout=120)
    assert answers["first"] == "Thanks, Dana. I found order #48213: a blue kettle, shipped."
    assert answers["second"].startswith("Thanks, Dana. I've issued refund R-48213")  # knew her
    assert service.calls == [("lookup_order", "48213"), *REFUNDED]  # one after the other, once


def _seen_waiting(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set when a run finds its thread held by another: a spy on the lease (it calls
    the real one), so the test knows the second request is queued, without a sleep."""
    waiting = threading.Event()
    take = ThreadLease.take

    def seen(self: Any, seconds: float) -> Any:
        taken = take(self, seconds)
        if isinstance(taken, Lease):
            waiting.set()
        return taken

    monkeypatch.setattr(ThreadLease, "take", seen)
    return waiting


def test_a_lone_surrogate_is_refused_and_nothing_stored(ledger_store: Store) -> None:
    agent = SupportAgent(ledger_store)
    agent.handle("zoe", "I'm Zoë 👩🏽‍💻 order 48213 🚚📦")
    before = agent.graph.get_state(agent.config("zoe"))
    transcript = ledger_store.session("zoe").read().version
    with pytest.raises(InvalidStateValue) as caught:
        agent.handle("zoe", "where is it \ud83d")  # half an emoji, from a broken client
    assert caught.value.channel == "__start__"  # the turn's input, refused before the graph ran
    assert "message 1, its content: holds a lone surrogate" in str(caught.value)
    after = agent.graph.get_state(agent.config("zoe"))
    assert after.config["configurable"]["checkpoint_id"] == \
        before.config["configurable"]["checkpoint_id"]
    assert after.values["messages"] == before.values["messages"]
    assert ledger_store.session("zoe").read().version == transcript
    assert agent.handle("zoe", "Who am I?").startswith("Of course: you're Zoë")
