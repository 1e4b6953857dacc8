"""ChatLedgerHistory with a token budget and summaries; LangChain chat models
as token counters and as summarizers."""

from __future__ import annotations

import asyncio

import pytest
from langchain_core.language_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from chatledger import Store, open_async_store, summary_through, user
from chatledger.langchain import ChatLedgerHistory


def words(text: str) -> list[int]:
    return [len(word) for word in text.split()]


def model(*responses: str) -> FakeListChatModel:
    """A chat model that counts a token a word, offline, and answers ``responses``."""
    return FakeListChatModel(responses=list(responses) or ["unused"],
                             custom_get_token_ids=words)


def _ten_turns(store: Store) -> None:
    history = ChatLedgerHistory(store, "s")
    for n in range(10):
        history.add_messages([HumanMessage(f"question {n} about order {n}"),
                              AIMessage(f"answer {n}")])


def test_a_budgeted_history_returns_the_newest_messages_that_fit(store: Store) -> None:
    _ten_turns(store)
    counted = ChatLedgerHistory(store, "s", max_tokens=40, count_tokens=model())
    messages = counted.messages
    assert messages[-1].content == "answer 9" and 2 <= len(messages) < 20
    tokens = model().get_num_tokens_from_messages(messages)
    assert tokens <= 40 + 3 * len(messages)  # LangChain adds a few tokens a list
    assert [m.content for m in ChatLedgerHistory(store, "s", max_tokens=5).messages] == [
        "answer 9"]


def test_the_summary_comes_first_as_a_system_message(store: Store) -> None:
    _ten_turns(store)
    summarizer = model("The user asked about orders 0 to 7.")
    ack = store.session("s").maybe_compact(summarizer, trigger_tokens=30, keep_tokens=30)
    assert ack is not None
    messages = ChatLedgerHistory(store, "s", with_summary=True).messages
    assert messages[0] == SystemMessage("The user asked about orders 0 to 7.",
                                        id=messages[0].id)
    assert {type(m) for m in messages[1:]} == {HumanMessage, AIMessage}
    assert messages[-1].content == "answer 9"
    # without with_summary, the summary entry is no conversation message
    plain = ChatLedgerHistory(store, "s").messages
    assert len(plain) == 20 and not any(isinstance(m, SystemMessage) for m in plain)
    assert summary_through(store.session("s").read(last=1).messages[0]) is not None


def test_a_chat_model_summarizes_with_the_default_prompt(store: Store) -> None:
    _ten_turns(store)
    summarizer = model("summary one")
    store.session("s").maybe_compact(summarizer, trigger_tokens=10, keep_tokens=10,
                                     count_tokens=summarizer.get_num_tokens_from_messages)
    summary = store.session("s").read(with_summary=True).summary
    assert summary is not None and summary.text == "summary one"


def test_last_and_a_budget_do_not_mix(store: Store) -> None:
    with pytest.raises(ValueError, match="last cannot be given with max_tokens"):
        ChatLedgerHistory(store, "s", last=3, max_tokens=100)
    with pytest.raises(TypeError, match="count_tokens"):
        ChatLedgerHistory(store, "s", max_tokens=10, count_tokens="gpt-4").messages  # noqa: B018


def test_the_async_history_and_compaction(url: str) -> None:
    async def scenario() -> list[str]:
        async with await open_async_store(url) as store:
            session = store.session("s")
            await session.append([user(f"message {n} " * 3) for n in range(30)])
            ack = await session.maybe_compact(model("async summary"), trigger_tokens=50,
                                              keep_tokens=20)
            assert ack is not None
            history = ChatLedgerHistory(store, "s", max_tokens=60, with_summary=True,
                                        count_tokens=model())
            return [str(m.content) for m in await history.aget_messages()]

    contents = asyncio.run(scenario())
    assert contents[0] == "async summary" and contents[-1].startswith("message 29")
