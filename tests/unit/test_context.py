"""The decisions of context that fits, without a store."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage

from chatledger import Message, approximate_tokens, assistant, summary_through, system, user
from chatledger._context import SUMMARY_KEY, count_with, reply_text, summary_entry, transcript


def test_the_approximate_counter_counts_text_calls_and_blocks() -> None:
    assert approximate_tokens([user("abcd" * 10)]) == 10 + 4
    assert approximate_tokens([user("")]) == 4
    call = assistant("", tool_calls=[{"id": "c", "name": "f", "args": {"x": 1}}])
    assert approximate_tokens([call]) > 4
    image = user([{"type": "text", "text": "see"}, {"type": "image", "url": "x" * 400}])
    assert approximate_tokens([image]) > 100
    assert approximate_tokens([user("x", data=b"y" * 10_000)]) == 5  # bytes are not sent


def test_only_a_marked_system_message_is_a_summary() -> None:
    assert summary_through(summary_entry("s", 7)) == 7
    assert summary_entry("s", 7).id == summary_entry("t", 7).id  # one per cursor
    for message in (user("x", metadata={SUMMARY_KEY: {"through_seq": 3}}),
                    system("x"), system("x", metadata={SUMMARY_KEY: 3}),
                    system("x", metadata={SUMMARY_KEY: {"through_seq": True}}),
                    system("x", metadata={SUMMARY_KEY: {"through_seq": "3"}})):
        assert summary_through(message) is None


def test_a_counter_can_be_a_callable_a_model_or_its_method() -> None:
    class Model:
        def get_num_tokens_from_messages(self, messages: list[Any]) -> int:
            return 10 * len(messages)

    messages = [user("a"), user("b")]
    assert count_with(None) is approximate_tokens
    assert count_with(Model())(messages) == 20
    assert count_with(Model().get_num_tokens_from_messages)(messages) == 20
    assert count_with(len)(messages) == 2
    with pytest.raises(TypeError, match="count_tokens must be"):
        count_with(3)


def test_a_reply_and_a_transcript_are_plain_text() -> None:
    assert reply_text(AIMessage("plain")) == "plain"
    blocks = AIMessage([{"type": "text", "text": "a"}, "b", {"type": "image", "url": "x"}])
    assert reply_text(blocks) == "ab"
    messages: list[Message] = [summary_entry("before", 2), user("hi"),
                               assistant("", tool_calls=[{"id": "c", "name": "f", "args": {}}])]
    assert transcript(messages).splitlines() == [
        "previous summary: before", "user: hi",
        'assistant:  [{"id":"c","name":"f","args":{}}]']
