"""Promise 7: exact round-trip, or a clear rejection with nothing written.

Property-based: valid messages built from all of Unicode and arbitrary JSON
must come back equal; a message with one bad value planted anywhere must be
refused at append, naming that value's field, with the session unchanged.
"""

from __future__ import annotations

import enum
import math
import uuid
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatledger import InvalidMessage, Message, Store, assistant, system, tool, user
from tests.backends import BackendCase, fuzz

SAMPLES = [
    "👩‍👩‍👧‍👦 family, 👍🏽 thumbs, 🏳️‍🌈 flag",  # ZWJ sequences and skin tones
    "注文番号は123です、返金をお願いします",  # CJK
    "مرحبا، أريد استرداد المبلغ",  # right-to-left
    "שלום \u200f\u202e reversed",  # RTL marks and overrides
    "nul\x00inside",
    "e\u0301 a\u0308\u0323 combining",
    "\ufeffBOM and \uffff noncharacter and 𝄞",
    "",
]
texts = st.one_of(st.sampled_from(SAMPLES), st.text(st.characters(exclude_categories=["Cs"])))
keys = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False) | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(keys, json_values, max_size=5)
blocks = st.one_of(texts, st.fixed_dictionaries({"type": st.just("text"), "text": texts}),
                   json_objects)
contents = st.one_of(texts, st.lists(blocks, max_size=4))
tool_calls = st.lists(
    st.fixed_dictionaries({"id": texts, "name": texts, "args": json_objects}), max_size=3)
stamps = st.datetimes(timezones=st.sampled_from([None, timezone.utc,
                                                 timezone(timedelta(hours=-7, minutes=-30))]))


@st.composite
def messages(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["user", "assistant", "system", "tool"]))
    fields: dict[str, Any] = {
        "content": draw(contents),
        "metadata": draw(json_objects),
        "created_at": draw(stamps),
        "name": draw(st.none() | texts),
        "data": draw(st.none() | st.binary(max_size=64)),
    }
    if draw(st.booleans()):
        fields["id"] = draw(st.text(st.characters(exclude_categories=["Cs"]), min_size=1,
                                    max_size=40))
    if role == "assistant":
        return assistant(tool_calls=draw(tool_calls), **fields)
    if role == "tool":
        return tool(tool_call_id=draw(texts.filter(bool)), **fields)
    return (user if role == "user" else system)(**fields)


FUZZ = 120  # examples a test draws on a backend case with fuzz_share 1


def test_valid_messages_come_back_exactly_equal(backend: BackendCase, store: Store) -> None:
    @fuzz(backend, FUZZ)
    @given(batch=st.lists(messages(), min_size=1, max_size=3, unique_by=lambda m: m.id))
    def check(batch: list[Message]) -> None:
        session = store.session(uuid.uuid4().hex)
        ack = session.append(batch)
        history = session.read(after=ack.first_seq - 1)
        assert history.messages == batch
        for sent, got in zip(batch, history.messages, strict=True):
            assert got.created_at.utcoffset() == sent.created_at.utcoffset()
            assert type(got.content) is type(sent.content)
            assert got.data == sent.data and type(got.data) is type(sent.data)

    check()


BAD_VALUES = [b"bytes", datetime(2026, 1, 1), date(2026, 1, 1), Decimal("1.10"), {1, 2},
              frozenset(), (1, 2), math.nan, math.inf, -math.inf, 2**63, -(2**63) - 1,
              "lone \ud83d surrogate", uuid.uuid4(), object()]


@st.composite
def planted(draw: st.DrawFn) -> tuple[Message, str]:
    """A valid message with one bad value planted in its metadata, and the field path."""
    bad = draw(st.sampled_from(BAD_VALUES))
    path = draw(st.lists(keys, min_size=1, max_size=3))
    metadata: dict[str, Any] = {}
    node = metadata
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = bad
    return user(draw(texts), metadata=metadata), "messages[1].metadata." + ".".join(path)


# The refusal is the store's, made before any I/O (the same code on every backend): the
# full run is on memory; elsewhere a few examples check that nothing reached the backend.
PLANTED_ELSEWHERE = 10


def test_a_planted_bad_value_is_refused_by_name(backend: BackendCase, store: Store) -> None:
    @fuzz(backend, FUZZ if backend.name == "memory" else PLANTED_ELSEWHERE)
    @given(case=planted(), good=messages())
    def check(case: tuple[Message, str], good: Message) -> None:
        message, field = case
        session = store.session("s")
        before = session.read().version
        with pytest.raises(InvalidMessage) as caught:
            session.append([good, message])
        assert caught.value.field == field
        assert session.read().version == before

    check()


class _Key(str):
    """A str subclass: the JSON encoder refuses it as a key, without a path."""


class _Color(str, enum.Enum):
    RED = "red"


def _nested(depth: int) -> Any:
    return [_nested(depth - 1)] if depth else 1


@pytest.mark.parametrize(
    ("message", "field", "reason"),
    [
        (user("lone \udc00"), "messages[0].content", "lone surrogate"),
        (user([{"type": "text", "text": "\ud800"}]), "messages[0].content[0].text",
         "lone surrogate"),
        (user(["ok", 3]), "messages[0].content[1]", "must be a str or a JSON object"),
        (user(b"bytes"), "messages[0].content", "must be a str or a list"),  # type: ignore[arg-type]
        (Message(role="bot", content="hi"), "messages[0].role", "is not one of"),  # type: ignore[arg-type]
        (Message(role=["user"], content="hi"), "messages[0].role", "is not one of"),  # type: ignore[arg-type]
        (Message(role="tool", content="42"), "messages[0].tool_call_id", "required"),
        (user("x", tool_call_id="c1"), "messages[0].tool_call_id", "only allowed on tool"),
        (user("x", tool_calls=[{"id": "1", "name": "f", "args": {}}]), "messages[0].tool_calls",
         "only allowed on assistant"),
        (assistant("x", tool_calls=[{"id": 1, "name": "f", "args": {}}]),  # type: ignore[list-item]
         "messages[0].tool_calls[0].id", "must be a str"),
        (assistant("x", tool_calls=[{"id": "1", "name": "f", "args": []}]),  # type: ignore[list-item]
         "messages[0].tool_calls[0].args", "JSON object"),
        (assistant("x", tool_calls=["call"]), "messages[0].tool_calls[0]", "must be an object"),  # type: ignore[list-item]
        (Message(role="assistant", content="x", tool_calls=()), "messages[0].tool_calls",  # type: ignore[arg-type]
         "must be a list"),
        (user("x", metadata={1: "int key"}), "messages[0].metadata",
         "has an int key 1; JSON keys are plain str"),
        (user("x", metadata={"a": {_Key("k"): 1}}), "messages[0].metadata.a",
         "str subclass _Key key"),
        (user("x", metadata={_Color.RED: 1}), "messages[0].metadata", "str subclass _Color"),
        (user("x", metadata={"\ud800": 1}), "messages[0].metadata key '\\ud800'", "surrogate"),
        (user("x", metadata=[1]), "messages[0].metadata", "must be a JSON object"),  # type: ignore[arg-type]
        (user("x", id=""), "messages[0].id", "non-empty str"),
        (user("x", id="i" * 257), "messages[0].id", "over 256"),
        (user("x", name=5), "messages[0].name", "str or None"),
        (user("x", created_at="yesterday"), "messages[0].created_at", "must be a datetime"),
        (user("x", metadata={"deep": _nested(70)}), "messages[0].metadata.deep" + "[0]" * 64,
         "deeper than 64"),
    ],
)
def test_each_kind_of_bad_input_names_its_field(store: Store, message: Message, field: str,
                                                reason: str) -> None:
    with pytest.raises(InvalidMessage) as caught:
        store.session("s").append([message])
    assert caught.value.field == field
    assert reason in caught.value.reason
    assert store.session("s").info() is None


def test_a_message_over_max_message_bytes_is_refused(store: Store) -> None:
    session = store.session("s")
    with pytest.raises(InvalidMessage, match=r"over max_message_bytes=1,048,576") as caught:
        session.append([user("ok"), user("x" * (1024 * 1024))])
    assert caught.value.field == "messages[1]"
    assert session.info() is None
    big = user("é" * 500_000)  # 1,000,000 bytes of UTF-8: under the limit
    assert session.append([big]).version == 1
    assert session.read().messages == [big]


def test_the_size_limit_is_an_option(open_ledger: Any) -> None:
    store = open_ledger(max_message_bytes=200)
    with pytest.raises(InvalidMessage, match="over max_message_bytes=200"):
        store.session("s").append([user("y" * 300)])


@pytest.mark.parametrize("batch", [[], "not a list", user("single")])
def test_a_batch_must_be_a_non_empty_list_of_messages(store: Store, batch: Any) -> None:
    with pytest.raises(InvalidMessage) as caught:
        store.session("s").append(batch)
    assert caught.value.field == "messages"


def test_a_non_message_in_the_batch_is_named(store: Store) -> None:
    with pytest.raises(InvalidMessage, match="expected a chatledger Message, got dict") as caught:
        store.session("s").append([user("ok"), {"role": "user", "content": "hi"}])  # type: ignore[list-item]
    assert caught.value.field == "messages[1]"


@pytest.mark.parametrize(
    ("message", "field"),
    [
        (user("lone \udc00 in plain text"), "messages[0].content"),
        (user("x", id="id\ud800"), "messages[0].id"),
        (user("x", name="\ud800"), "messages[0].name"),
        (tool("x", tool_call_id="call\udfff"), "messages[0].tool_call_id"),
    ],
)
def test_invalid_text_in_a_plain_message_is_named(store: Store, message: Message,
                                                  field: str) -> None:
    with pytest.raises(InvalidMessage, match="lone surrogate") as caught:
        store.session("s").append([message])
    assert caught.value.field == field
    assert store.session("s").info() is None


def test_a_timestamp_that_would_not_come_back_equal_is_refused(store: Store) -> None:
    from zoneinfo import ZoneInfo

    ambiguous = datetime(2026, 11, 1, 1, 30, fold=1, tzinfo=ZoneInfo("America/New_York"))
    odd_offset = datetime(2026, 1, 1, tzinfo=timezone(timedelta(microseconds=7)))
    for stamp in (ambiguous, odd_offset):
        with pytest.raises(InvalidMessage, match="would not come back equal") as caught:
            store.session("s").append([user("x", created_at=stamp)])
        assert caught.value.field == "messages[0].created_at"
    assert store.session("s").info() is None
    zoned = datetime(2026, 7, 1, 12, 0, tzinfo=ZoneInfo("Europe/Paris"))
    store.session("s").append([user("summer", created_at=zoned)])
    stored = store.session("s").read().messages[0].created_at
    assert stored == zoned and stored.utcoffset() == zoned.utcoffset()


def test_a_datetime_subclass_is_stored_as_a_datetime(store: Store) -> None:
    class Stamp(datetime):
        def isoformat(self, sep: str = "T", timespec: str = "auto") -> str:
            return "not a date"

    stamp = Stamp(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    store.session("s").append([user("x", created_at=stamp)])
    assert store.session("s").read().messages[0].created_at == stamp
