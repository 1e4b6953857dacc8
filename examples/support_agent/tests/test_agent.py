"""The support agent on create_agent, tested the way production treats it.

Every test that takes ``ledger_store`` runs once per store the plugin is given:
``pytest --chatledger-url memory:// --chatledger-url sqlite:// --chatledger-url redis
--chatledger-url postgres --chatledger-url dynamodb`` sweeps all five (the
default is memory:// and sqlite://).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support_agent.agent import SupportAgent
from support_agent.tickets import TicketingService

from chatledger import Store, summary_through

HERE = Path(__file__).parent
HELLO = "Hi, I'm Dana and my order number is 48213."


def said_by_customer(store: Store, customer: str) -> list[str]:
    """What the customer said, from the transcript (every turn, summarized or not)."""
    return [m.text for m in store.session(customer).read()
            if m.role == "user" and summary_through(m) is None]


def test_a_complaint_is_looked_up_checked_decided_and_ticketed(ledger_store: Store) -> None:
    service = TicketingService()
    agent = SupportAgent(ledger_store, service)
    agent.handle("omar", "Hello, I am Omar, order 39950.")
    answer = agent.handle("omar", "The shoes arrived damaged.")
    assert answer == ("Thanks, Omar. A replacement (X-39950) arrives Tuesday. "
                      "I've opened ticket T-0001 so a colleague follows up.")
    agent.handle("lena", "This is Lena, order 51007.")
    assert "refund R-51007" in agent.handle("lena", "I want my money back")  # not shipped yet
    assert service.calls == [
        ("lookup_order", "39950"),
        ("lookup_order", "39950"), ("check_shipment", "39950"),
        ("ship_replacement", "39950"), ("create_ticket", "order 39950: replacement X-39950"),
        ("lookup_order", "51007"),
        ("lookup_order", "51007"), ("check_shipment", "51007"),
        ("issue_refund", "51007"), ("create_ticket", "order 51007: refund R-51007"),
    ]
    assert service.tickets == ["order 39950: replacement X-39950", "order 51007: refund R-51007"]


def test_later_answers_depend_on_earlier_turns(ledger_store: Store) -> None:
    service = TicketingService()
    agent = SupportAgent(ledger_store, service)
    assert "order #48213: a blue kettle" in agent.handle("dana", HELLO)
    assert "arrives Friday" in agent.handle("dana", "When will it arrive?")
    assert "refund R-48213" in agent.handle("dana", "I'd like a refund please")
    assert agent.handle("dana", "Do you remember me?") == \
        "Of course: you're Dana and your order is #48213."
    assert service.refunds == ["48213"]


def test_two_customers_are_kept_apart(ledger_store: Store) -> None:
    agent = SupportAgent(ledger_store)
    agent.handle("dana", HELLO)
    agent.handle("omar", "Hello, I am Omar, order 39950.")
    assert "you're Omar and your order is #39950" in agent.handle("omar", "Who am I?")
    assert "you're Dana and your order is #48213" in agent.handle("dana", "Who am I?")


def test_the_transcript_stays_whole_while_the_state_is_summarized(ledger_store: Store) -> None:
    agent = SupportAgent(ledger_store, summarize_at=12, keep=4)
    texts = [HELLO] + [["When will it arrive?", "Thanks!", "Is it still on time?"][n % 3]
                       for n in range(11)]
    for text in texts:
        agent.handle("dana", text)
    state = agent.graph.get_state(agent.config("dana")).values["messages"]
    assert state[0].additional_kwargs.get("lc_source") == "summarization"
    assert len(state) < 3 * len(texts)  # the model's view was cut short ...
    assert said_by_customer(ledger_store, "dana") == texts  # ... and nothing was lost
    assert agent.handle("dana", "Do you remember me?") == \
        "Of course: you're Dana and your order is #48213."  # the facts kept in the summary


@pytest.mark.chatledger(urls=["sqlite://"])  # a store another process reaches
def test_a_new_process_carries_on_the_conversation(ledger_url: str) -> None:
    assert "order #48213" in _agent_process(ledger_url, "dana", HELLO)
    assert _agent_process(ledger_url, "dana", "Do you remember me?") == \
        "Of course: you're Dana and your order is #48213."


# Deliberately confusable and exotic text: the point is that it comes back exactly.
FLOOD = [
    "I'm Zoë 👩🏽‍💻 order 48213 🚚📦",
    "مرحبا، أين طلبي؟ where is it",
    "שלום \u202eRTL override\u202c and a zero\u200bwidth space",
    "e\u0301\u0301 combining marks, and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙",  # noqa: RUF001
    "🏳️‍🌈🇺🇦👨‍👩‍👧‍👦" * 50,
]


def test_emoji_and_right_to_left_text_come_back_exactly(ledger_store: Store) -> None:
    agent = SupportAgent(ledger_store)
    for text in FLOOD:
        agent.handle("zoe", text)
    state = agent.graph.get_state(agent.config("zoe")).values["messages"]
    assert [m.content for m in state if m.type == "human"] == FLOOD  # the checkpoints
    assert said_by_customer(ledger_store, "zoe") == FLOOD  # the transcript
    assert "you're Zoë" in agent.handle("zoe", "Who am I?")


def _agent_process(url: str, customer: str, message: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(HERE.parent), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-m", "support_agent", url, customer, message],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
