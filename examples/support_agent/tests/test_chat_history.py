"""The migration example: the support agent on the chat-history path
(``support_agent.chat_history``), its memory tested the way production treats it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from support_agent.chat_history import MEMORY_UNAVAILABLE, SupportAgent
from support_agent.tickets import TicketingService

from chatledger import Store, summary_through
from chatledger.langchain import ChatLedgerHistory
from chatledger.testing import LedgerFaults, LedgerProbe

HERE = Path(__file__).parent
HELLO = "Hi, I'm Dana and my order number is 48213."


def test_later_answers_depend_on_earlier_turns(ledger_store: Store) -> None:
    service = TicketingService()
    agent = SupportAgent(ledger_store, service)
    assert "order #48213: a blue kettle" in agent.handle("dana", HELLO)
    assert "arrives Friday" in agent.handle("dana", "When will it arrive?")
    assert "refund R-48213" in agent.handle("dana", "I'd like a refund please")
    assert agent.handle("dana", "Do you remember me?") == \
        "Of course: you're Dana and your order is #48213."
    assert service.refunds == ["48213"]


def test_tool_calls_and_results_are_remembered_whole(ledger_store: Store) -> None:
    agent = SupportAgent(ledger_store)
    agent.handle("omar", "Hello, I am Omar, order 39950.")
    agent.handle("omar", "It arrived damaged.")
    messages = ChatLedgerHistory(ledger_store, "omar").messages
    calls = [m for m in messages if isinstance(m, AIMessage) and m.tool_calls]
    assert [c["name"] for m in calls[-4:] for c in m.tool_calls] == [
        "lookup_order", "check_shipment", "ship_replacement", "create_ticket"]  # delivered
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert [r.tool_call_id for r in results[-4:]] == [m.tool_calls[0]["id"] for m in calls[-4:]]


@pytest.mark.chatledger(urls=["sqlite://", "redis"])
def test_a_new_process_carries_on_the_conversation(ledger_url: str) -> None:
    first = _agent_process(ledger_url, "dana", HELLO)
    assert "order #48213" in first
    second = _agent_process(ledger_url, "dana", "Do you remember me?")
    assert second == "Of course: you're Dana and your order is #48213."


def test_two_customers_are_kept_apart(ledger_store: Store) -> None:
    agent = SupportAgent(ledger_store)
    agent.handle("dana", HELLO)
    agent.handle("omar", "Hello, I am Omar, order 39950.")
    assert "you're Omar and your order is #39950" in agent.handle("omar", "Who am I?")
    assert "you're Dana and your order is #48213" in agent.handle("dana", "Who am I?")


def test_a_returning_customer_from_a_seeded_history(seed_session, ledger_store: Store) -> None:
    session, version = seed_session(HERE / "transcripts" / "returning_customer.yaml",
                                    session_id="priya")
    assert version == 2
    agent = SupportAgent(ledger_store)
    assert agent.handle("priya", "Hi again") == "Welcome back, Priya! How can I help?"
    assert agent.handle("priya", "When will it ship?") == \
        "Thanks, Priya. Order #51007 has not shipped yet."  # the order she gave last week
    assert session.read().version > version


def test_a_redis_outage_is_no_amnesia(ledger_store: Store, ledger_faults: LedgerFaults,
                                      ledger_probe: LedgerProbe) -> None:
    agent = SupportAgent(ledger_store)
    agent.handle("dana", HELLO)
    with ledger_faults.outage():
        answer = agent.handle("dana", "Hi, it's me again")
    assert answer == MEMORY_UNAVAILABLE  # not "Hello! How can I help you today?"
    assert agent.handle("dana", "Do you remember me?") == \
        "Of course: you're Dana and your order is #48213."
    ledger_probe.assert_no_silent_empty_reads()
    assert ledger_probe.errors["BackendUnavailable"] >= 1


def test_memory_lost_in_a_restart_is_said_not_hidden(ledger_store: Store,
                                                     ledger_faults: LedgerFaults) -> None:
    agent = SupportAgent(ledger_store)
    agent.handle("dana", HELLO)
    ledger_faults.restart(empty=True)  # no persistence: the conversation is gone
    assert agent.handle("dana", "Hi, it's me again") == MEMORY_UNAVAILABLE


@pytest.mark.chatledger(urls=["sqlite://", "redis"])
def test_four_processes_taking_turns_on_one_session(ledger_url: str,
                                                    ledger_store: Store) -> None:
    said = {worker: [f"Hi, I am W{worker}x{turn}" for turn in range(5)] for worker in range(4)}
    processes = [_start_agent(ledger_url, "shared", *said[worker]) for worker in said]
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert len(out.splitlines()) == 5
    messages = ChatLedgerHistory(ledger_store, "shared").messages
    turns = _turns(messages)
    assert sorted(str(turn[0].content) for turn in turns) == sorted(
        text for texts in said.values() for text in texts)  # each turn once, none lost
    for turn in turns:  # whole: the customer's words, then the agent's answer to them
        name = str(turn[0].content).split()[-1]
        assert len(turn) == 2
        assert str(turn[1].content) in (f"Nice to meet you, {name}. How can I help?",
                                        f"Welcome back, {name}! How can I help?")
    for texts in said.values():  # and each process's turns in its own order
        mine = [str(turn[0].content) for turn in turns if str(turn[0].content) in texts]
        assert mine == texts


# Deliberately confusable and exotic text: the point is that it comes back exactly.
FLOOD = [
    "I'm Zoë 👩🏽‍💻 order 48213 🚚📦",
    "مرحبا، أين طلبي؟ where is it",
    "注文はいつ届きますか？ when",  # noqa: RUF001
    "e\u0301\u0301 combining marks, and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙",  # noqa: RUF001
    "🏳️‍🌈🇺🇦👨‍👩‍👧‍👦" * 50,
    "שלום \u202eRTL override\u202c and a zero\u200bwidth space",
]


def test_a_flood_of_emoji_and_mixed_scripts_comes_back_exactly(ledger_store: Store) -> None:
    agent = SupportAgent(ledger_store)
    for text in FLOOD:
        agent.handle("zoe", text)
    said = [m.content for m in ChatLedgerHistory(ledger_store, "zoe").messages
            if isinstance(m, HumanMessage)]
    assert said == FLOOD
    assert "you're Zoë" in agent.handle("zoe", "Who am I?")


def _turns(messages: list) -> list[list]:  # type: ignore[type-arg]
    turns: list[list] = []  # type: ignore[type-arg]
    for message in messages:
        if isinstance(message, HumanMessage):
            turns.append([])
        turns[-1].append(message)
    return turns


def _start_agent(url: str, customer: str, *messages: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(HERE.parent), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.Popen([sys.executable, "-m", "support_agent.chat_history", url, customer,
                             *messages],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _agent_process(url: str, customer: str, message: str) -> str:
    out, err = _start_agent(url, customer, message).communicate(timeout=60)
    assert not err.strip() or "Warning" in err, err
    return out.strip()


def test_a_200_turn_conversation_stays_under_budget_and_keeps_every_fact(
        ledger_store: Store) -> None:
    budget = 1_500
    agent = SupportAgent(ledger_store, max_tokens=budget)
    orders = ["48213", "51007", "39950"]
    facts = []
    for turn in range(200):
        if turn % 25 == 0:  # a fact every 25 turns: a name, then order numbers
            said = (f"Hi, I'm Dana and my order number is {orders[0]}." if turn == 0 else
                    f"Sorry, my order number is {orders[turn // 25 % 3]}, turn {turn}.")
            facts.append(said)
        else:
            said = ["When will it arrive?", "Thanks!", "Is it still on time?"][turn % 3]
        agent.handle("dana", said)
        seen = ledger_store.session("dana").read(max_tokens=budget, with_summary=True)
        assert seen.tokens is not None and seen.tokens <= budget, turn
        assert seen.cut_seq == 0, turn  # the summary and all after it fit: nothing between
    session = ledger_store.session("dana")
    seen = session.read(max_tokens=budget, with_summary=True)
    assert seen.summary is not None
    window = [m.text for m in seen.messages]
    for fact in facts:
        assert fact in window or fact in seen.summary.text.splitlines(), fact
    # no message between summaries is lost: the latest covers up to its cursor,
    # the window holds everything after it, and the ledger still has every message
    through = summary_through(seen.summary)
    assert through is not None and seen.messages[0].seq == through + 1
    assert len([m for m in session.read() if m.role == "user"]) == 200
    assert agent.handle("dana", "Do you remember me?") == \
        "Of course: you're Dana and your order is #51007."  # the last one given (turn 175)
