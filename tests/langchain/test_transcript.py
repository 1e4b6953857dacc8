"""TranscriptMiddleware: every message of a create_agent agent's turns in a chatledger
session, while SummarizationMiddleware rewrites the agent's state."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import pytest
from click.testing import CliRunner
from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from chatledger import (
    AsyncStore,
    InvalidMessage,
    MemoryLostError,
    Store,
    open_async_store,
    open_store,
    summary_through,
)
from chatledger._cli import main
from chatledger.langchain import ChatLedgerHistory, TranscriptMiddleware
from chatledger.langchain._transcript_plan import is_summary, plan, state_ids
from chatledger.langgraph import AsyncLedgerSaver, LedgerSaver

from ._agents import (
    RuleModel,
    Summarizer,
    cancel_order,
    lookup_as_a_command,
    lookup_as_a_command_of_dicts,
    lookup_order,
    lookup_with_a_set,
    screenshot,
    turn,
)

TURNS = 6


def agent_on(store: Store | AsyncStore, saver: Any, model: RuleModel | None = None,
             **middleware: Any) -> Any:
    return create_agent(
        model or RuleModel(), [lookup_order, cancel_order], checkpointer=saver,
        middleware=[TranscriptMiddleware(store, **middleware),
                    SummarizationMiddleware(Summarizer(), trigger=("messages", 8),
                                            keep=("messages", 3))])


def said(turns: int) -> list[tuple[str, str]]:
    """The transcript of ``turns`` turns: question, tool call, its result, answer."""
    expected = []
    for index in range(turns):
        result = f"order status for 'question {index}': shipped"
        expected += [("user", f"question {index}"), ("assistant", ""), ("tool", result),
                     ("assistant", f"Here is what I found: {result}")]
    return expected


def check_transcript(stored: list[Any], state: list[BaseMessage]) -> None:
    turns = [m for m in stored if summary_through(m) is None]
    assert [(m.role, m.text) for m in turns] == said(TURNS)  # all of it, in order
    assert len({m.id for m in turns}) == len(turns)
    assert is_summary(state[0]) and len(state) < len(turns)  # while the state was rewritten
    assert [summary_through(m) for m in stored if summary_through(m)] == [5, 10, 15, 20]


def test_the_transcript_stays_whole_while_the_state_is_summarized(store: Store) -> None:
    agent = agent_on(store, LedgerSaver(store))
    config = {"configurable": {"thread_id": "customer-42"}}
    for index in range(TURNS):
        agent.invoke(turn(f"question {index}", index), config)
    state = agent.get_state(config).values["messages"]
    check_transcript(list(store.session("customer-42").read()), state)
    # the latest summary and what follows its cursor are the agent's state, message for message
    window = store.session("customer-42").read(with_summary=True)
    assert window.summary is not None and window.summary.text == state[0].text
    assert [m.id for m in window.messages] == [m.id for m in state[1:]]
    history = ChatLedgerHistory(store, "customer-42", with_summary=True).messages
    assert [m.content for m in history] == [m.content for m in state]


def test_the_async_hooks_on_an_async_store(url: str) -> None:
    async def run() -> tuple[list[Any], list[BaseMessage]]:
        async with await open_async_store(url) as store:
            agent = agent_on(store, AsyncLedgerSaver(store))
            config = {"configurable": {"thread_id": "customer-42"}}
            for index in range(TURNS):
                await agent.ainvoke(turn(f"question {index}", index), config)
            state = (await agent.aget_state(config)).values["messages"]
            return list(await store.session("customer-42").read()), state

    check_transcript(*asyncio.run(run()))


def test_a_sync_store_serves_an_async_run() -> None:
    async def run(store: Store) -> list[BaseMessage]:
        async with await open_async_store(store.url) as checkpoints:
            agent = agent_on(store, AsyncLedgerSaver(checkpoints))
            config = {"configurable": {"thread_id": "t"}}
            for index in range(TURNS):
                await agent.ainvoke(turn(f"question {index}", index), config)
            return list((await agent.aget_state(config)).values["messages"])

    with open_store(f"memory://{uuid.uuid4().hex}") as store:
        state = asyncio.run(run(store))
        check_transcript(list(store.session("t").read()), state)


@pytest.fixture
def memory() -> Any:
    with open_store(f"memory://{uuid.uuid4().hex}") as store:
        yield store


def test_a_model_step_run_again_stores_nothing_twice(memory: Store) -> None:
    result = "order status for 'question 0': shipped"
    agent = agent_on(memory, LedgerSaver(memory), RuleModel(fail_on=result))
    config = {"configurable": {"thread_id": "t"}}
    with pytest.raises(RuntimeError, match="timed out"):
        agent.invoke(turn("question 0", 0), config)  # the call after the tool's result
    session = memory.session("t")
    assert [m.role for m in session.read()] == ["user", "assistant", "tool"]  # stored before it
    agent.invoke(None, config)  # the run resumed: the same step, the same batch again
    assert [(m.role, m.text) for m in session.read()] == said(1)  # once each
    assert session.read().version == 4


def test_the_progress_channel_grows_as_the_state_does(memory: Store) -> None:
    """A list that only grew: LedgerSaver stores the pairs a step adds, not the list."""
    agent = create_agent(RuleModel(), [lookup_order], checkpointer=LedgerSaver(memory),
                         middleware=[TranscriptMiddleware(memory)])
    config = {"configurable": {"thread_id": "t"}}
    seen = []
    for index in range(3):
        agent.invoke(turn(f"question {index}", index), config)
        seen.append(agent.get_state(config).values["chatledger_transcript"])
    assert seen[0] == seen[1][:4] and seen[1] == seen[2][:8] and len(seen[2]) == 12
    stored = memory.session("t").read()
    assert seen[2] == [[m.id, m.seq] for m in stored]


def test_a_tool_that_ends_the_turn_is_stored_by_its_end(memory: Store) -> None:
    agent = agent_on(memory, LedgerSaver(memory))
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke(turn("please cancel order 7", 0), config)
    stored = memory.session("t").read()
    assert [(m.role, m.text) for m in stored][-1] == ("tool", "cancelled: please cancel order 7")
    assert agent.invoke(turn("please cancel order 8", 1), config)["messages"][-1].content == \
        stored.messages[-1].text.replace("7", "8")
    assert memory.session("t").read().version == 6


def test_a_bytes_artifact_is_kept_and_the_thread_goes_on(memory: Store) -> None:
    # A screenshot or a PDF from a tool: stored as the message's data, read back as bytes.
    screenshot_named = screenshot.model_copy(update={"name": "lookup_order"})
    agent = create_agent(RuleModel(), [screenshot_named], checkpointer=LedgerSaver(memory),
                         middleware=[TranscriptMiddleware(memory)])
    config = {"configurable": {"thread_id": "t"}}
    for index in range(2):
        agent.invoke(turn(f"question {index}", index), config)
    tools = [m for m in ChatLedgerHistory(memory, "t").messages if m.type == "tool"]
    assert [m.artifact for m in tools] == [b"\x89PNG\r\n\x1a\n\x00"] * 2  # type: ignore[attr-defined]
    assert memory.session("t").read().version == 8


@pytest.mark.parametrize(("run_async", "returned"), [
    (False, "message"), (True, "message"), (False, "command"), (False, "command of dicts")])
def test_a_tool_result_the_transcript_cannot_keep_fails_the_tool_call_not_the_thread(
        memory: Store, run_async: bool, returned: str) -> None:
    # The async run: the sync store's calls in a worker thread; any saver serves here.
    saver = InMemorySaver() if run_async else LedgerSaver(memory)
    tool = {"message": lookup_with_a_set, "command": lookup_as_a_command,
            "command of dicts": lookup_as_a_command_of_dicts}[returned]
    agent = create_agent(RuleModel(), [tool], checkpointer=saver,
                         middleware=[TranscriptMiddleware(memory)])
    config = {"configurable": {"thread_id": "t"}}
    words = (r"^the result of tool 'lookup_order' \(call 'call-1'\)\.artifact\.orders: set is "
             r"not JSON .*; the transcript could not keep it")
    run = ((lambda: asyncio.run(agent.ainvoke(turn("question 0", 0), config))) if run_async
           else (lambda: agent.invoke(turn("question 0", 0), config)))
    with pytest.raises(InvalidMessage, match=words):
        run()
    state = agent.get_state(config)  # the result never reached the state
    assert [m.type for m in state.values["messages"]] == ["human", "ai"]
    assert [m.role for m in memory.session("t").read()] == ["user"]


def test_a_message_the_transcript_cannot_keep_is_named_by_its_id(memory: Store) -> None:
    bad = HumanMessage("hi", id="human-0", additional_kwargs={"at": {1}})
    agent = agent_on(memory, LedgerSaver(memory))
    with pytest.raises(InvalidMessage, match=r"^the agent's user message 'human-0'"
                                             r"\.additional_kwargs\.at: set is not JSON"):
        agent.invoke({"messages": [bad]}, {"configurable": {"thread_id": "t"}})
    assert memory.session("t").info() is None


def test_the_session_can_be_named_by_a_callable(memory: Store) -> None:
    agent = agent_on(memory, LedgerSaver(memory),
                     session_id=lambda config: f"user-{config['configurable']['user_id']}")
    agent.invoke(turn("question 0", 0), {"configurable": {"thread_id": "t", "user_id": "42"}})
    assert [(m.role, m.text) for m in memory.session("user-42").read()] == said(1)


def test_the_transcript_belongs_to_the_runs_user(memory: Store) -> None:
    agent = agent_on(memory, LedgerSaver(memory))
    agent.invoke(turn("question 0", 0), {"configurable": {"thread_id": "t", "user_id": "c-42"}})
    assert memory.session("t").read().version == 4
    report = memory.forget_user("c-42")  # the transcript goes with the user's threads
    assert memory.session("t").read().version == 0
    assert report.deleted == ("lg:1:t", "lg:1:t:", "t") and report.threads == ("t",)
    untagged = agent_on(memory, LedgerSaver(memory, user_key=None), user_key=None)
    untagged.invoke(turn("question 0", 0), {"configurable": {"thread_id": "u", "user_id": "c"}})
    assert memory.forget_user("c").deleted == ()


def test_a_run_without_a_thread_id_is_refused(memory: Store) -> None:
    agent = create_agent(RuleModel(), [lookup_order], middleware=[TranscriptMiddleware(memory)])
    with pytest.raises(ValueError, match="thread_id"):
        agent.invoke(turn("question 0", 0))


def test_an_async_store_on_a_sync_run_is_refused(memory: Store) -> None:
    store = asyncio.run(open_async_store(f"memory://{uuid.uuid4().hex}"))
    agent = agent_on(store, LedgerSaver(memory))
    with pytest.raises(TypeError, match=r"async store: run the agent with ainvoke\(\)"):
        agent.invoke(turn("question 0", 0), {"configurable": {"thread_id": "t"}})


def test_a_transcript_lost_behind_its_back_is_loud(memory: Store) -> None:
    agent = agent_on(memory, LedgerSaver(memory))
    config = {"configurable": {"thread_id": "t"}}
    agent.invoke(turn("question 0", 0), config)
    memory.session("t").delete()  # what an eviction or a server restarted empty does
    with pytest.raises(MemoryLostError):
        agent.invoke(turn("question 1", 1), config)
    assert memory.session("t").read().version == 0  # no partial transcript started


def test_messages_without_ids_get_the_same_ids_every_time() -> None:
    messages = [HumanMessage("hi", id="h1"), HumanMessage("again"), HumanMessage("again")]
    ids = state_ids(messages, "s")
    assert ids == state_ids(messages, "s") and ids[0] == "h1"
    assert len(set(ids)) == 3  # the same words twice are two messages
    assert ids[1] != state_ids([messages[0], HumanMessage("other")], "s")[1]
    assert ids[1] != state_ids(messages, "another session")[1]
    step = plan(messages, {}, "s")
    assert [m.id for m in step.batch] == ids


def test_a_summary_with_nothing_stored_before_it_covers_nothing() -> None:
    summary = HumanMessage("Here is a summary", id="sum",
                           additional_kwargs={"lc_source": "summarization"})
    step = plan([summary, HumanMessage("hi", id="h")], {}, "s")
    assert (step.summary_id, step.through_seq, step.batch_ids) == ("sum", 0, ["h"])


def test_the_transcript_reads_in_show_and_export(tmp_path: Any) -> None:
    url = f"sqlite:///{tmp_path}/agent.db"
    with open_store(url) as store:
        agent = agent_on(store, LedgerSaver(store))
        for index in range(TURNS):
            agent.invoke(turn(f"question {index}", index), {"configurable": {"thread_id": "t"}})
    shown = CliRunner().invoke(main, ["--url", url, "show", "t", "--full"])
    assert shown.exit_code == 0, shown.output
    assert "question 0" in shown.output and "[summary of seqs up to 20]" in shown.output
    out = tmp_path / "t.jsonl"
    assert CliRunner().invoke(main, ["--url", url, "export", "t", "--out", str(out)]).exit_code == 0
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["role"], r["content"]) for r in records
            if "chatledger.summary" not in r.get("metadata", {})] == said(TURNS)


def test_the_middleware_names_the_extra_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import chatledger.langchain

    monkeypatch.delitem(sys.modules, "chatledger.langchain._transcript")
    monkeypatch.setitem(sys.modules, "langchain.agents.middleware", None)  # not installed
    with pytest.raises(ImportError, match=r'pip install -e "\.\[agents\]"'):
        chatledger.langchain.TranscriptMiddleware  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'Transcript'"):
        chatledger.langchain.Transcript  # noqa: B018


def test_a_commands_messages_are_read_in_every_form_add_messages_takes() -> None:
    from langgraph.types import Command

    from chatledger.langchain._transcript import _result_messages

    update = {"messages": [{"role": "user", "content": "hi"}, ("assistant", "hello"), "again",
                           ("tool", "a result with no call id")]}
    found = _result_messages(Command(update=update))
    assert [(m.type, m.content) for m in found[:3]] == [  # type: ignore[union-attr]
        ("human", "hi"), ("ai", "hello"), ("human", "again")]
    assert found[3] is None  # add_messages refuses it in its own words
    assert _result_messages(Command(update=[("messages", "hi")])) == []  # no tool sends it
