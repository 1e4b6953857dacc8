"""Every LangChain message type comes back from the ledger equal, or is refused whole."""

from __future__ import annotations

import operator
from functools import reduce
from typing import Any

import pytest
from langchain_core.language_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    ChatMessageChunk,
    FunctionMessage,
    FunctionMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    RemoveMessage,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
)

from chatledger import (
    CorruptEntryError,
    InvalidMessage,
    Message,
    Store,
    assistant,
    system,
    tool,
    user,
)
from chatledger.langchain import ChatLedgerHistory, from_ledger, to_ledger


def round_trip(store: Store, message: BaseMessage, session: str = "s") -> BaseMessage:
    """Store ``message`` through one history and read it back through another."""
    ChatLedgerHistory(store, session).add_messages([message])
    (back,) = ChatLedgerHistory(store, session).messages
    assert from_ledger(to_ledger(message), "s") == message  # the same without a store
    return back


def test_human_message(store: Store) -> None:
    message = HumanMessage("My order is 123 🧾", id="h-1", name="ada",
                           additional_kwargs={"lang": "en"})
    assert round_trip(store, message) == message


def test_a_message_without_an_id_comes_back_without_one(store: Store) -> None:
    message = HumanMessage("no id")
    back = round_trip(store, message)
    assert back == message
    assert back.id is None
    (stored,) = store.session("s").read().messages
    assert stored.id  # the ledger gave it one of its own


def test_ai_message_with_every_field(store: Store) -> None:
    message = AIMessage(
        "Checking order 123",
        id="run-42",
        tool_calls=[{"name": "lookup_order", "args": {"order": 123, "deep": {"a": [1.5]}},
                     "id": "call-1"}],
        invalid_tool_calls=[{"name": "refund", "args": "{not json", "id": "call-2",
                             "error": "bad JSON", "type": "invalid_tool_call"}],
        usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
                        "input_token_details": {"cache_read": 3}},
        response_metadata={"model_name": "fake-1", "finish_reason": "tool_calls"},
    )
    assert round_trip(store, message) == message


def test_ai_message_with_a_tool_call_without_an_id(store: Store) -> None:
    message = AIMessage("", tool_calls=[{"name": "now", "args": {}, "id": None}])
    back = round_trip(store, message)
    assert back == message
    assert isinstance(back, AIMessage)
    assert back.tool_calls[0]["id"] is None


def test_tool_message_with_artifact_and_status(store: Store) -> None:
    message = ToolMessage('{"status": "shipped"}', tool_call_id="call-1", name="lookup_order",
                          artifact={"rows": [{"order": 123, "eta": None}]}, status="error",
                          id="t-1")
    assert round_trip(store, message) == message


@pytest.mark.parametrize("cls", [ToolMessage, ToolMessageChunk])
def test_a_bytes_artifact_comes_back_as_bytes(store: Store, cls: type[ToolMessage]) -> None:
    # A tool's screenshot or PDF: JSON has no bytes, the ledger message's data has.
    message = cls("took it", tool_call_id="call-1", artifact=b"\x89PNG\r\n\x00", id="t-1")
    assert round_trip(store, message) == message
    stored = store.session("s").read().messages[-1]
    assert stored.data == b"\x89PNG\r\n\x00"
    assert "artifact" not in stored.metadata.get("langchain", {})


def test_system_message(store: Store) -> None:
    message = SystemMessage("You are a support agent.", id="sys-1")
    assert round_trip(store, message) == message


def test_chat_message_with_a_custom_role(store: Store) -> None:
    message = ChatMessage("Looks right to me.", role="critic", id="c-1")
    assert round_trip(store, message) == message


def test_function_message(store: Store) -> None:
    message = FunctionMessage('{"temp": 21}', name="get_weather", id="f-1")
    assert round_trip(store, message) == message


def test_ai_message_chunk_from_streaming(store: Store) -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage("Your order ships today", id="run-7")]))
    chunks = list(model.stream("where is my order?"))
    assert len(chunks) > 1  # it really streamed
    whole: AIMessageChunk = reduce(operator.add, chunks)
    assert round_trip(store, whole) == whole
    assert whole.content == "Your order ships today"


def test_ai_message_chunk_with_streamed_tool_call(store: Store) -> None:
    whole = AIMessageChunk(
        content="", id="run-8",
        tool_call_chunks=[{"name": "lookup_order", "args": '{"order"', "id": "call-1", "index": 0}],
    ) + AIMessageChunk(
        content="", tool_call_chunks=[{"name": None, "args": ": 123}", "id": None, "index": 0}],
        chunk_position="last",
    )
    assert whole.tool_calls == [{"name": "lookup_order", "args": {"order": 123},
                                 "id": "call-1", "type": "tool_call"}]
    assert round_trip(store, whole) == whole


@pytest.mark.parametrize("message", [
    HumanMessageChunk("par", id="x-1"),
    SystemMessageChunk("tial", id="x-2"),
    ToolMessageChunk("res", tool_call_id="call-9", id="x-3"),
    ChatMessageChunk("hm", role="narrator", id="x-4"),
    FunctionMessageChunk("{}", name="fn", id="x-5"),
], ids=lambda message: type(message).__name__)
def test_other_chunk_types(store: Store, message: BaseMessage) -> None:
    assert round_trip(store, message) == message


def test_multimodal_content_blocks(store: Store) -> None:
    question = HumanMessage(content=[
        {"type": "text", "text": "What is in these pictures?"},
        {"type": "image", "url": "https://example.com/cat.png"},
        {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        {"type": "file", "file_id": "file-abc"},
        "and a plain string block",
    ], id="q-1")
    answer = AIMessage(content_blocks=[
        {"type": "reasoning", "reasoning": "Two cats."},
        {"type": "text", "text": "Cats.", "annotations": [{"type": "citation", "url": "u"}]},
    ], response_metadata={"output_version": "v1"}, id="a-1")
    assert round_trip(store, question, "q") == question
    assert round_trip(store, answer, "a") == answer


def test_extra_attributes_come_back(store: Store) -> None:
    message = HumanMessage("hi", id="e-1", trace={"span": "abc"})
    back = round_trip(store, message)
    assert back == message
    assert back.model_extra == {"trace": {"span": "abc"}}


def test_the_ledger_sees_standard_roles_and_fields(store: Store) -> None:
    """Other readers of the session (the CLI, other adapters) see plain messages."""
    ChatLedgerHistory(store, "s").add_messages([
        HumanMessage("hi", id="1"),
        AIMessage("", id="2", tool_calls=[{"name": "f", "args": {"x": 1}, "id": "call-1"}]),
        ToolMessage("ok", id="3", tool_call_id="call-1"),
        SystemMessage("be brief", id="4"),
        ChatMessage("hmm", role="critic", id="5"),
        ChatMessage("sure", role="assistant", id="6"),
        FunctionMessage("{}", name="fn", id="7"),
    ])
    stored = store.session("s").read().messages
    assert [(m.role, m.text) for m in stored] == [
        ("user", "hi"), ("assistant", ""), ("tool", "ok"), ("system", "be brief"),
        ("user", "hmm"), ("assistant", "sure"), ("tool", "{}"),
    ]
    assert stored[1].tool_calls == [{"name": "f", "args": {"x": 1}, "id": "call-1",
                                     "type": "tool_call"}]
    assert stored[2].tool_call_id == "call-1"
    assert stored[6].tool_call_id == "fn"  # legacy function results match by name
    assert [m.metadata for m in stored[:4]] == [{}, {}, {}, {}]  # nothing beyond the ledger's own
    assert stored[4].metadata == {"langchain": {"role": "critic", "type": "chat"}}


def test_messages_written_with_chatledgers_own_api_read_as_langchain(store: Store) -> None:
    call = {"id": "call-1", "name": "lookup_order", "args": {"order": 123}}
    store.session("s").append([
        system("be kind", id="m1"), user("order 123?", id="m2", name="ada"),
        assistant("", tool_calls=[call], id="m3"),  # type: ignore[list-item]
        tool("shipped", tool_call_id="call-1", id="m4"),
    ])
    assert ChatLedgerHistory(store, "s").messages == [
        SystemMessage("be kind", id="m1"), HumanMessage("order 123?", id="m2", name="ada"),
        AIMessage("", tool_calls=[call], id="m3"),  # type: ignore[list-item]
        ToolMessage("shipped", tool_call_id="call-1", id="m4"),
    ]


def test_an_artifact_that_is_not_json_refuses_the_whole_batch(store: Store) -> None:
    history = ChatLedgerHistory(store, "s")
    with pytest.raises(InvalidMessage) as caught:
        history.add_messages([
            HumanMessage("look it up", id="1"),
            ToolMessage("done", tool_call_id="call-1", artifact={"at": {1, 2}}, id="2"),
            AIMessage("found it", id="3"),
        ])
    assert caught.value.field == "messages[1].artifact.at"
    assert "not JSON" in caught.value.reason
    assert store.session("s").info() is None  # nothing of that batch was stored
    assert history.messages == []


@pytest.mark.parametrize(("value", "fragment"), [
    (float("nan"), "finite"), (2**64, "64-bit"), ("\ud800", "surrogate"),
])
def test_values_that_would_not_come_back_equal_are_refused(
    store: Store, value: Any, fragment: str
) -> None:
    with pytest.raises(InvalidMessage) as caught:
        ChatLedgerHistory(store, "s").add_messages(
            [AIMessage("x", response_metadata={"odd": value})]
        )
    assert caught.value.field == "messages[0].response_metadata.odd"
    assert fragment in caught.value.reason


class NotQuiteHuman(HumanMessage):
    """A subclass of a known type would come back as its base class."""


@pytest.mark.parametrize(("message", "fragment"), [
    (RemoveMessage(id="m1"), "RemoveMessage is not a message type"),
    (NotQuiteHuman("hi"), "NotQuiteHuman is not a message type"),
    (("human", "hi"), "expected a LangChain message, got tuple"),
], ids=["remove", "subclass", "tuple"])
def test_what_cannot_be_stored_exactly_is_refused(
    store: Store, message: Any, fragment: str
) -> None:
    with pytest.raises(InvalidMessage) as caught:
        ChatLedgerHistory(store, "s").add_messages([HumanMessage("ok"), message])
    assert caught.value.field == "messages[1]"
    assert fragment in caught.value.reason
    assert store.session("s").info() is None


@pytest.mark.parametrize(("metadata", "fragment"), [
    ({"langchain": 5}, "metadata.langchain is not an object"),
    ({"langchain": {"type": "alien"}}, "unknown LangChain message type 'alien'"),
    ({"langchain": {"type": 7}}, "unknown LangChain message type 7"),
    ({"langchain": {"status": "maybe"}}, "cannot be read as a LangChain message"),
])
def test_an_entry_that_is_no_langchain_message_is_reported_not_skipped(
    store: Store, metadata: dict[str, Any], fragment: str
) -> None:
    store.session("s").append([user("fine", id="1"),
                               Message(role="tool", content="odd", tool_call_id="c",
                                       metadata=metadata, id="2")])
    with pytest.raises(CorruptEntryError) as caught:
        _ = ChatLedgerHistory(store, "s").messages
    assert (caught.value.session, caught.value.seq) == ("s", 2)
    assert fragment in caught.value.reason


@pytest.mark.parametrize(("message", "fragment"), [
    (Message(role="tool", content="x", tool_call_id="c", id="2",
             metadata={"langchain": {"artifact_in_data": True}}),
     "metadata.langchain.artifact_in_data names data it does not carry"),
    (Message(role="user", content="x", id="2", data=b"ab",
             metadata={"langchain": {"artifact_in_data": True}}),
     "it carries 2 bytes of data, which LangChain messages have no field for"),
])
def test_an_artifact_marker_that_does_not_match_the_data_is_reported(
        store: Store, message: Message, fragment: str) -> None:
    store.session("s").append([message])
    with pytest.raises(CorruptEntryError, match=fragment):
        _ = ChatLedgerHistory(store, "s").messages


def test_an_entry_with_data_is_refused_not_read_without_its_bytes(store: Store) -> None:
    # LangChain messages have no field for bytes: dropping them would return
    # another message than the one stored, so the read says so instead.
    store.session("s").append([user("fine", id="1"), user("a file", id="2", data=b"\x00" * 10)])
    with pytest.raises(CorruptEntryError) as caught:
        _ = ChatLedgerHistory(store, "s").messages
    assert (caught.value.session, caught.value.seq) == ("s", 2)
    assert "it carries 10 bytes of data, which LangChain messages have no field for" \
        in caught.value.reason
    assert from_ledger(store.session("s").read(last=2).messages[0], "s") == HumanMessage(
        "fine", id="1")
