"""Exact or refused: a state value LangGraph's serializer would alter raises
InvalidStateValue before anything is stored; valid text of any script round-trips.

LangGraph's serializer writes ``?`` for a lone surrogate in any str, and raises a
bare TypeError for one in a dict key (checked first below, so the refusal covers
what it really does, and nothing it stores exactly).
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import BaseModel

from chatledger import InvalidMessage, RetryPolicy
from chatledger.langgraph import InvalidStateValue, LedgerSaver, thread_config
from chatledger.langgraph._exact import ExactValues
from tests.langgraph._blocking import BlockingSaver
from tests.langgraph._graphs import texts
from tests.langgraph._runs import run
from tests.langgraph.conftest import backend_url

LONE = "\ud83d"
VALID = "Grüße 😀🇫🇷 \U0001d54f שלום مرحبا? 中文 \u200f"  # astral, flags, RTL, a mark, a '?'


@dataclasses.dataclass
class Ticket:
    title: str


class Order(BaseModel):
    note: str


def test_what_langgraphs_serializer_does_with_a_lone_surrogate() -> None:
    serde = JsonPlusSerializer()
    assert serde.loads_typed(serde.dumps_typed(f"hi {LONE}")) == "hi ?"
    assert serde.loads_typed(serde.dumps_typed([{"a": [f"x{LONE}"]}])) == [{"a": ["x?"]}]
    with pytest.raises(TypeError, match="surrogates"):
        serde.dumps_typed({f"k{LONE}": 1})
    assert serde.loads_typed(serde.dumps_typed(VALID)) == VALID


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def saver(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    opener: Any = LedgerSaver if kind == "sync" else BlockingSaver
    with opener.from_url(backend_url("sqlite", request, tmp_path),
                         retry=RetryPolicy.none()) as opened:
        yield opened


def _snapshot(saver: Any, config: Any) -> tuple[Any, Any]:
    state = run(saver, "get_state", config)
    return state.config["configurable"].get("checkpoint_id"), state.values


BAD_INPUTS = {
    "content": ([("user", f"hi {LONE}")], ("messages", 0, 1),
                "key 'messages' of channel '__start__', item 1, item 2"),
    "message content": ([HumanMessage(f"hi {LONE}")], ("messages", 0, "content"),
                        "key 'messages' of channel '__start__', message 1, its content"),
    "tool-call args": (
        [HumanMessage("x"), AIMessage("", tool_calls=[
            {"id": "c1", "name": "lookup_order", "args": {"order": f"7{LONE}"}}])],
        ("messages", 1, "tool_calls", 0, "args", "order"),
        "message 2, its tool_calls, item 1, key 'args', key 'order'"),
    "additional kwargs key": (
        [HumanMessage("x", additional_kwargs={f"k{LONE}": 1})],
        ("messages", 0, "additional_kwargs", f"k{LONE}"),
        "message 1, its additional_kwargs, the key 'k\\ud83d'"),
}


@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_a_turn_holding_a_lone_surrogate_is_refused_and_stores_nothing(
        saver: Any, case: str, durability: str) -> None:
    config = thread_config("t")
    run(saver, "invoke", {"messages": [("user", VALID)]}, config)
    before = _snapshot(saver, config)
    messages, path, words = BAD_INPUTS[case]

    with pytest.raises(InvalidStateValue) as refused:
        run(saver, "invoke", {"messages": messages}, config, durability=durability)

    assert isinstance(refused.value, InvalidMessage)
    assert _snapshot(saver, config) == before
    if durability != "exit":  # with exit, the first put is the run's last: the state's
        assert (refused.value.channel, refused.value.path) == ("__start__", path)
        assert words in str(refused.value) and "nothing was stored" in str(refused.value)
    assert "messages[" not in str(refused.value)


def test_valid_text_of_every_script_round_trips_exactly(saver: Any) -> None:
    config = thread_config("t")
    message = AIMessage(VALID, additional_kwargs={VALID: [VALID, {"n": VALID}]},
                        tool_calls=[{"id": "c", "name": "lookup_order", "args": {"q": VALID}}])

    run(saver, "update_state", config, {"messages": [HumanMessage(VALID), message]})

    stored = run(saver, "get_state", config).values["messages"]
    assert [m.content for m in stored] == [VALID, VALID]
    assert stored[1].additional_kwargs == {VALID: [VALID, {"n": VALID}]}
    assert stored[1].tool_calls[0]["args"] == {"q": VALID}


def _config(checkpoint_id: str | None = None) -> Any:
    configurable = {"thread_id": "t", "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _put(saver: Any, values: dict[str, Any], parent: str | None = None) -> Any:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = dict.fromkeys(values, 1)
    return saver.put(_config(parent), checkpoint, {"source": "loop", "step": 0},
                     dict.fromkeys(values, 1))


PLAIN = {
    "a plain str": (f"x{LONE}", (), "channel 'notes'"),
    "nested": ({"a": [1, {"b": (f"x{LONE}",)}]}, ("a", 1, "b", 0),
               "key 'a' of channel 'notes', item 2, key 'b', item 1"),
    "a key": ({f"k{LONE}": 1}, (f"k{LONE}",), "the key 'k\\ud83d' of channel 'notes'"),
    "a set": ({f"x{LONE}"}, (0,), "item 1 of channel 'notes'"),
    "a dataclass": (Ticket(f"x{LONE}"), ("title",), "its title of channel 'notes'"),
    "a model": (Order(note=f"x{LONE}"), ("note",), "its note of channel 'notes'"),
    "a list item": ([VALID, f"x{LONE}"], (1,), "item 2 of channel 'notes'"),
}


@pytest.mark.parametrize("case", list(PLAIN))
def test_a_put_is_refused_before_anything_is_stored(saver: Any, case: str) -> None:
    stored = _put(saver, {"notes": VALID})
    value, path, words = PLAIN[case]

    with pytest.raises(InvalidStateValue) as refused:
        _put(saver, {"notes": value}, stored["configurable"]["checkpoint_id"])

    assert (refused.value.channel, refused.value.path) == ("notes", path)
    assert str(refused.value).startswith(f"{words}: holds a lone surrogate '\\ud83d'")
    latest = saver.get_tuple(_config())
    assert latest.config == stored and latest.checkpoint["channel_values"] == {"notes": VALID}


def test_metadata_holding_a_lone_surrogate_is_refused_before_anything_is_stored(
        saver: Any) -> None:
    """LangGraph copies ``config["metadata"]`` and ``configurable``'s extra keys into the
    checkpoint's metadata, which its serializer would store with '?' for the surrogate."""
    config = thread_config("t")
    run(saver, "invoke", {"messages": [("user", VALID)]}, config)
    before = _snapshot(saver, config)
    for bad in ({**config, "metadata": {"note": f"x {LONE}"}},
                {"configurable": {**config["configurable"], "channel_name": f"hi {LONE}"}}):
        with pytest.raises(InvalidStateValue) as refused:
            run(saver, "invoke", {"messages": [("user", VALID)]}, bad)
        assert refused.value.channel == "" and len(refused.value.path) == 1
        assert str(refused.value).startswith("the checkpoint's metadata, key ")
        assert _snapshot(saver, config) == before
    with pytest.raises(InvalidStateValue, match="the checkpoint's metadata, key 'who'"):
        saver.put(_config(), empty_checkpoint(), {"source": "input", "who": f"{LONE}"}, {})


def test_a_write_is_refused_before_anything_is_stored(saver: Any) -> None:
    stored = _put(saver, {"notes": VALID})
    saver.put_writes(stored, [("notes", VALID)], "task-1")

    with pytest.raises(InvalidStateValue) as refused:
        saver.put_writes(stored, [("notes", "fine"), ("log", [f"x{LONE}"])], "task-2")

    assert (refused.value.channel, refused.value.path) == ("log", (0,))
    assert saver.get_tuple(stored).pending_writes == [("task-1", "notes", VALID)]


def test_a_value_that_cannot_be_serialized_keeps_its_own_error(saver: Any) -> None:
    class Opaque:
        def __init__(self) -> None:
            self.text = f"x{LONE}"

    with pytest.raises(TypeError, match="not msgpack serializable"):
        _put(saver, {"notes": Opaque()})


def test_a_value_shared_twice_and_found_exact_again_is_not_refused(saver: Any) -> None:
    shared = {"q": "why?", "when": datetime(2026, 12, 6, tzinfo=timezone.utc)}
    first = _put(saver, {"notes": [shared, shared, "why?"], "card": {"a": shared, "b": shared}})
    again = _put(saver, {"notes": [shared, shared, "why?", "and?"]},
                 first["configurable"]["checkpoint_id"])

    assert saver.get_tuple(again).checkpoint["channel_values"]["notes"] == [
        shared, shared, "why?", "and?"]
    assert saver.get_tuple(first).checkpoint["channel_values"]["card"] == {
        "a": shared, "b": shared}


def test_values_found_exact_are_remembered_within_a_bound(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("chatledger.langgraph._exact._REMEMBERED", 2)
    exact, serde = ExactValues(), JsonPlusSerializer()
    for text in ["a?", "b?", "c?", "a?"]:
        exact.dumps(serde, "c", text)

    assert len(exact._exact) == 2


class _Reversed:
    """JsonPlus's bytes reversed (as an encrypting serializer would hide them):
    what it stores cannot be scanned for '?'."""

    def __init__(self) -> None:
        self.inner = JsonPlusSerializer()

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        kind, data = self.inner.dumps_typed(obj)
        return f"r-{kind}", data[::-1]

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return self.inner.loads_typed((data[0][2:], data[1][::-1]))


class _Exact:
    """A serializer that stores any str exactly (as UTF-8 with surrogatepass)."""

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return "text", str(obj).encode("utf-8", "surrogatepass")

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return data[1].decode("utf-8", "surrogatepass")


class _Unreadable(_Exact):
    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        raise ValueError("cannot read it back")


def test_another_serializer_is_refused_only_what_it_would_alter() -> None:
    exact, altering = ExactValues(), _Reversed()

    with pytest.raises(InvalidStateValue):
        exact.dumps(_Unreadable(), "c", f"x{LONE}")
    assert _Exact().loads_typed(exact.dumps(_Exact(), "c", f"x{LONE}")) == f"x{LONE}"
    assert exact.dumps(altering, "c", VALID)[0] == "r-msgpack"
    with pytest.raises(InvalidStateValue):
        exact.dumps(altering, "c", f"x{LONE}")


def test_a_turn_with_valid_text_runs_as_usual(saver: Any) -> None:
    config = thread_config("t")
    run(saver, "invoke", {"messages": [("user", VALID)]}, config)

    assert texts(run(saver, "get_state", config).values) == [VALID, f"Noted: {VALID}"]
