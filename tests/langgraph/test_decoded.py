"""A read decodes only the items of a list it did not read before; the others are exact copies."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, MessagesState, StateGraph

from chatledger.langgraph import LedgerSaver
from chatledger.langgraph._decoded import LIMIT, DecodedItems
from chatledger.langgraph._entries import Typed

SERDE = JsonPlusSerializer()


class Reply(AIMessage):
    """A message class of the user's own: its decoding is the user's, not known here."""


class Decoder:
    """``decode(items)`` as the saver passes it, counting the items it decodes."""

    def __init__(self) -> None:
        self.decoded: list[Typed] = []

    def __call__(self, items: list[Typed]) -> list[Any]:
        self.decoded += items
        return [SERDE.loads_typed(item) for item in items]


MESSAGES: list[Any] = [
    HumanMessage("hi", id="1", additional_kwargs={"n": [1, 1.0, True, None]}),
    AIMessage("", id="2", tool_calls=[{"name": "f", "args": {"a": (1, 2), "b": -0.0},
                                       "id": "t"}],
              usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
              response_metadata={"model": "m"}),
    ToolMessage([{"type": "text", "text": "ok"}], tool_call_id="t", artifact={"k": [1]}),
    HumanMessage("extra", id="4", custom={"x": 1}),
]


def _typed(items: list[Any]) -> list[Typed]:
    return [SERDE.dumps_typed(item) for item in items]


def _same(read: Any, decoded: Any) -> None:
    """``read`` is what decoding gives, field for field and type for type, sharing nothing."""
    assert type(read) is type(decoded)
    assert read.__getstate__() == decoded.__getstate__()
    assert repr(read.__dict__) == repr(decoded.__dict__)  # 1 is not 1.0, (1, 2) is not [1, 2]
    assert SERDE.dumps_typed(read) == SERDE.dumps_typed(decoded)
    assert read is not decoded and read.__dict__ is not decoded.__dict__


def test_items_read_before_are_copied_exactly_and_only_new_ones_decoded() -> None:
    memo, typed = DecodedItems(), _typed(MESSAGES)
    first = Decoder()
    read, states = memo.loads("s", "messages", typed, first)
    assert first.decoded == typed and None not in states

    again = Decoder()
    more = [*typed, SERDE.dumps_typed(HumanMessage("new", id="5"))]
    copies, copied_states = memo.loads("s", "messages", more, again)
    assert again.decoded == more[-1:]
    assert copied_states[:-1] == states
    for copy, item in zip(copies, [SERDE.loads_typed(t) for t in more], strict=True):
        _same(copy, item)
    for copy, item in zip(copies, read, strict=False):
        _same(copy, item)
    assert memo.loads("s", "other", typed, Decoder())[0] == read  # per channel
    other = Decoder()
    memo.loads("t", "messages", typed, other)  # per session
    assert other.decoded == typed


def test_an_item_edited_after_a_read_leaves_the_next_read_as_stored() -> None:
    memo, typed = DecodedItems(), _typed(MESSAGES)
    read, _ = memo.loads("s", "messages", typed, Decoder())
    read[0].content = "edited"
    read[0].additional_kwargs["n"].append("more")
    read[1].tool_calls[0]["args"]["a"] = None
    read[1].id = "changed"
    again, _ = memo.loads("s", "messages", typed, Decoder())
    for copy, item in zip(again, MESSAGES, strict=True):
        _same(copy, SERDE.loads_typed(SERDE.dumps_typed(item)))


@pytest.mark.parametrize("item", [
    "plain text", {"role": "user"}, Reply("mine"), HumanMessage("dated", when=b"\x00bytes"),
], ids=["str", "dict", "subclass", "bytes"])
def test_items_not_known_to_decode_alike_are_decoded_every_time(item: Any) -> None:
    memo, typed = DecodedItems(), _typed([item, MESSAGES[0]])
    memo.loads("s", "items", typed, Decoder())
    again = Decoder()
    read, states = memo.loads("s", "items", typed, again)
    kept = isinstance(item, HumanMessage)  # bytes are plain data to marshal
    assert again.decoded == ([] if kept else typed[:1])
    assert (states[0] is None) is not kept
    assert read[0] == SERDE.loads_typed(typed[0]) and read[1] == MESSAGES[0]


def test_a_shorter_list_keeps_only_its_own_items() -> None:
    memo, typed = DecodedItems(), _typed(MESSAGES)
    memo.loads("s", "messages", typed, Decoder())
    memo.loads("s", "messages", typed[:1], Decoder())
    again = Decoder()
    memo.loads("s", "messages", typed, again)
    assert again.decoded == typed[1:]


def test_sessions_are_dropped_past_the_budget_and_the_limit_and_forgotten() -> None:
    typed = _typed(MESSAGES)
    small = DecodedItems(budget=1)
    small.loads("s", "messages", typed, Decoder())
    assert not small._held and small._size == 0
    memo = DecodedItems()
    for n in range(LIMIT + 2):
        memo.loads(f"thread-{n}", "messages", typed[:1], Decoder())
    assert len(memo._held) == LIMIT and "thread-0" not in memo._held
    memo.forget("thread-1")
    assert not any(s.startswith("thread-1") for s in memo._held)
    memo.forget("")
    assert not memo._held and memo._size == 0


def _chat(saver: LedgerSaver) -> Any:
    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"reply {len(state['messages'])}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    return builder.compile(checkpointer=saver)


def test_a_runs_get_tuple_decodes_the_last_turns_messages_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    config: Any = {"configurable": {"thread_id": "t"}}
    with LedgerSaver.from_url("memory://decoded") as saver:
        decoded: list[int] = []
        original = saver._loads
        monkeypatch.setattr(saver, "_loads", lambda value: decoded.append(
            len(value) if isinstance(value, list) else 0) or original(value))
        graph = _chat(saver)
        for n in range(4):
            graph.invoke({"messages": [HumanMessage(f"turn {n}")]}, config)
        decoded.clear()
        graph.invoke({"messages": [HumanMessage("turn 4")]}, config)
        assert max(decoded) == 2  # the last turn's question and reply, not all eight
        state = graph.get_state(config).values["messages"]
        assert [m.content for m in state][-2:] == ["turn 4", "reply 9"]
        fresh = SERDE.loads_typed(SERDE.dumps_typed(state))
        for read, item in zip(state, fresh, strict=True):
            _same(read, item)

        # A message removed: the list is stored whole, and read as stored.
        graph.update_state(config, {"messages": [RemoveMessage(id=state[0].id)]})
        assert [m.content for m in graph.get_state(config).values["messages"]] == [
            m.content for m in state[1:]]


def test_another_serializer_decodes_every_item(monkeypatch: pytest.MonkeyPatch) -> None:
    class Mine(JsonPlusSerializer):
        pass

    config: Any = {"configurable": {"thread_id": "t"}}
    with LedgerSaver.from_url("memory://decoded-other", serde=Mine()) as saver:
        graph = _chat(saver)
        for n in range(3):
            graph.invoke({"messages": [HumanMessage(f"turn {n}")]}, config)
        assert not saver._decoded._held
