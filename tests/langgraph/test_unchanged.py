"""A put serializes only the items of a list that are new or changed since the last put."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import START, MessagesState, StateGraph

from chatledger.langgraph import InvalidStateValue, LedgerSaver
from chatledger.langgraph import _unchanged as unchanged
from chatledger.langgraph._entries import Typed
from chatledger.langgraph._unchanged import LIMIT, UnchangedItems

SERDE = JsonPlusSerializer()


class Counted:
    """``dumps(item, index)`` as the saver passes it, counting the items it serializes."""

    def __init__(self) -> None:
        self.items: list[Any] = []

    def __call__(self, item: Any, index: int) -> Typed:
        self.items.append(item)
        return SERDE.dumps_typed(item)


@dataclasses.dataclass
class Note:
    text: str


class Reply(AIMessage):
    """A message class of the user's own: it may serialize what its fields do not say."""


def _serialized(memo: UnchangedItems, value: list[Any], session: str = "s") -> Counted:
    dumps = Counted()
    typed = memo.serialize(session, "messages", value, dumps)
    assert typed == [SERDE.dumps_typed(item) for item in value]  # what a full dump gives
    return dumps


def test_only_the_items_appended_since_the_last_list_are_serialized() -> None:
    memo = UnchangedItems()
    messages: list[Any] = [HumanMessage("hi", id="1"), AIMessage("hello", id="2")]
    assert len(_serialized(memo, messages).items) == 2

    messages = [*messages, HumanMessage("more", id="3")]
    assert _serialized(memo, messages).items == [messages[2]]
    assert _serialized(memo, messages).items == []
    assert _serialized(memo, messages[1:]).items == []  # one removed: the rest are known
    assert len(_serialized(memo, messages, session="other").items) == 3  # per session


def _edit_content(m: Any) -> None:
    m.content = "edited"


def _add_kwarg(m: Any) -> None:
    m.additional_kwargs["seen"] = True


def _retype_usage(m: Any) -> None:
    m.response_metadata["tokens"] = 1.0  # 1 == 1.0, but not the same bytes


def _reorder(m: Any) -> None:
    m.response_metadata["b"] = m.response_metadata.pop("a")


def _negative_zero(m: Any) -> None:
    m.response_metadata["cost"] = -0.0  # 0.0 == -0.0, but not the same bytes


def _nested(m: Any) -> None:
    m.response_metadata["list"][0]["x"].append(2)


def _extra(m: Any) -> None:
    m.__pydantic_extra__["flag"] = "on"


def _recast(m: Any) -> None:
    m.__class__ = HumanMessage


@pytest.mark.parametrize("edit", [_edit_content, _add_kwarg, _retype_usage, _reorder,
                                  _negative_zero, _nested, _extra, _recast])
def test_an_item_edited_in_place_is_serialized_again(edit: Callable[[Any], None]) -> None:
    memo = UnchangedItems()
    message = AIMessage("hello", id="2", response_metadata={
        "tokens": 1, "a": 1, "b": 2, "cost": 0.0, "list": [{"x": [1]}]})
    message.response_metadata.pop("b")
    messages = [HumanMessage("hi", id="1"), message]
    _serialized(memo, messages)

    edit(message)

    assert _serialized(memo, messages).items == [message]
    assert _serialized(memo, messages).items == []  # known again, as edited


@pytest.mark.parametrize("item", [Note("a dataclass"), Reply("a subclass of the user's"),
                                  {"at": datetime(2026, 1, 1, tzinfo=timezone.utc)},
                                  bytearray(b"mutable")])
def test_items_that_are_not_plain_data_are_serialized_every_time(item: Any) -> None:
    memo = UnchangedItems()
    _serialized(memo, [item])
    assert _serialized(memo, [item]).items == [item]


def test_a_message_holding_what_is_not_plain_data_leaves_the_others_known() -> None:
    memo = UnchangedItems()
    odd = HumanMessage("x", additional_kwargs={"at": datetime(2026, 1, 1, tzinfo=timezone.utc)})
    messages = [odd, HumanMessage("y"), "plain"]
    _serialized(memo, messages)
    assert _serialized(memo, messages).items == [odd]


def test_plain_data_items_are_known_by_their_state() -> None:
    memo = UnchangedItems()
    items: list[Any] = ["text", 3, 2.5, None, True, b"raw", {"k": [1, (2, 3)], "s": {4}}]
    _serialized(memo, items)
    assert _serialized(memo, items).items == []
    items[6]["k"][1] = (2, 4)  # a tuple replaced inside the dict
    assert _serialized(memo, items).items == [items[6]]


def test_an_item_refused_is_not_kept() -> None:
    memo = UnchangedItems()

    def refuse(item: Any, index: int) -> Typed:
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        memo.serialize("s", "messages", [HumanMessage("x")], refuse)
    assert len(_serialized(memo, [HumanMessage("x")]).items) == 1


def test_sessions_are_dropped_past_the_budget_and_the_limit_and_forgotten() -> None:
    one = [HumanMessage("x" * 1000, id="1")]
    memo = UnchangedItems(budget=3000)  # an item and its state: about 2,200 bytes
    _serialized(memo, one, "a")
    _serialized(memo, one, "b")  # over the budget: "a" goes, least recently used
    assert len(_serialized(memo, one, "a").items) == 1
    assert _serialized(memo, one, "a").items == []
    _serialized(memo, [HumanMessage("y" * 2000)], "big")  # bigger than the budget: not kept
    assert len(_serialized(memo, [HumanMessage("y" * 2000)], "big").items) == 1

    memo = UnchangedItems()
    for n in range(LIMIT + 1):
        _serialized(memo, one, f"t{n}")
    assert len(_serialized(memo, one, "t0").items) == 1  # the least recently used went
    memo.forget("t1")
    assert len(_serialized(memo, one, "t1").items) == 1
    assert _serialized(memo, one, "t2").items == []


# -- through the saver ---------------------------------------------------------------

class CountingSerializer(JsonPlusSerializer):
    """LangGraph's serializer, counting the messages it serializes."""

    messages = 0

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        if isinstance(obj, HumanMessage | AIMessage):
            self.messages += 1
        return super().dumps_typed(obj)


def _chat(saver: LedgerSaver, edit: bool = False) -> Any:
    def reply(state: MessagesState) -> dict[str, Any]:
        if state["messages"][-1].content == "edit the first":
            state["messages"][0].content = "edited in place"  # what a careless node does
        if state["messages"][-1].content == "break the first":
            state["messages"][0].content = "broken \ud83d"
        return {"messages": [AIMessage("ok")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    return builder.compile(checkpointer=saver)


def test_a_chat_step_serializes_its_new_messages_only_and_keeps_edits() -> None:
    serde = CountingSerializer()
    config: Any = {"configurable": {"thread_id": "t"}}
    with LedgerSaver.from_url("memory://unchanged", serde=serde) as saver:
        graph = _chat(saver)
        for n in range(5):
            graph.invoke({"messages": [HumanMessage(f"turn {n}")]}, config)
        before = serde.messages
        graph.invoke({"messages": [HumanMessage("turn 5")]}, config)
        # The user's message and the reply, each in the put that added it; the other ten
        # were read by get_tuple or put by the step before, unchanged. (A write is a list
        # serialized whole, in one call counted nowhere here.)
        assert serde.messages - before == 2

        graph.invoke({"messages": [HumanMessage("edit the first")]}, config)
        stored = saver.get_tuple(config)
        assert stored is not None
        messages = stored.checkpoint["channel_values"]["messages"]
        assert messages[0].content == "edited in place"
        assert len(messages) == 14

        with pytest.raises(InvalidStateValue) as refused:  # the edit is checked again
            graph.invoke({"messages": [HumanMessage("break the first")]}, config)
        assert refused.value.path == (0, "content")


def test_only_a_runs_get_tuple_keeps_what_it_read() -> None:
    """get_state puts nothing after its read: keeping the items would cost it for nothing."""
    config: Any = {"configurable": {"thread_id": "t"}}
    with LedgerSaver.from_url("memory://unchanged-reads") as saver:
        graph = _chat(saver)
        graph.invoke({"messages": [HumanMessage("hi")]}, config)
        saver._unchanged.forget("")
        graph.get_state(config)
        assert not saver._unchanged._held
        graph.invoke({"messages": [HumanMessage("again")]}, config)
        assert saver._unchanged._held


def _read_back(typed: list[Typed]) -> list[Any]:
    return [SERDE.loads_typed(item) for item in typed]


def _counting_states(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each list whose states ``_states`` takes anew (a marshal per item), by length."""
    taken: list[int] = []
    original = unchanged._states

    def counted(items: Any) -> list[bytes | None]:
        taken.append(len(items))
        return original(items)

    monkeypatch.setattr(unchanged, "_states", counted)
    return taken


def test_items_read_back_from_known_bytes_take_their_states_and_edits_still_count(
        monkeypatch: pytest.MonkeyPatch) -> None:
    memo = UnchangedItems()
    messages: list[Any] = [HumanMessage("hi", id="1"), AIMessage("hello", id="2")]
    typed = memo.serialize("s", "messages", messages, Counted())
    taken = _counting_states(monkeypatch)
    read = _read_back(typed)
    memo.remember("s", "messages", read, typed)
    assert taken == []  # the states came with the bytes: no marshal of what was read
    assert _serialized(memo, [*read, HumanMessage("more", id="3")]).items[0].id == "3"

    read = _read_back(typed)
    memo.remember("s", "messages", read, typed)
    read[0].content = "edited in place"  # after the read: the next put must see it
    again = _serialized(memo, [*read, HumanMessage("more", id="3")])
    assert [m.id for m in again.items] == ["1", "3"]


def test_items_read_back_otherwise_take_their_states_anew(
        monkeypatch: pytest.MonkeyPatch) -> None:
    memo = UnchangedItems()
    typed = memo.serialize("s", "items", [("a", 1), ("b", 2)], Counted())  # tuples
    taken = _counting_states(monkeypatch)
    read = _read_back(typed)
    assert read == [["a", 1], ["b", 2]]  # read back as lists: another class
    memo.remember("s", "items", read, typed)
    assert taken == [2]
    memo.remember("s", "other", read, typed)  # a channel with no list known
    assert taken == [2, 2]
    dumps = Counted()
    assert memo.serialize("s", "items", read, dumps) == typed and dumps.items == []
