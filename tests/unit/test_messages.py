"""Messages, ids and the codec, without a store."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatledger import CorruptEntryError, Message, assistant, system, tool, user
from chatledger._codec import FORMAT_V1, FORMAT_V2, decode, encode
from chatledger._ids import new_id


def test_ids_are_uuid7_and_increase() -> None:
    ids = [new_id() for _ in range(5000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert {uuid.UUID(i).version for i in ids} == {7}


def test_helpers_set_roles_and_fields() -> None:
    call = {"id": "c1", "name": "f", "args": {}}
    assert assistant(tool_calls=[call]).tool_calls == [call]  # type: ignore[list-item]
    assert assistant("hi").tool_calls == []
    assert tool("42", tool_call_id="c1").tool_call_id == "c1"
    assert system("be brief").role == "system"
    assert user("x", name="dana").name == "dana"


def test_text_joins_text_blocks_only() -> None:
    message = user(["a", {"type": "text", "text": "b"}, {"type": "image_url", "image_url": "u"},
                    {"type": "text", "text": 3}])
    assert message.text == "ab"
    assert user("plain").text == "plain"


def test_seq_does_not_take_part_in_equality() -> None:
    message = user("x")
    stored = decode("s", 7, encode(message))
    assert stored == message and stored.seq == 7 and message.seq is None


def test_the_stored_form_is_utf8_with_a_format_byte() -> None:
    blob = encode(user("héllo 😀"))
    assert blob.startswith(FORMAT_V1)
    assert "héllo 😀".encode() in blob
    assert b"\\u" not in blob


def test_empty_strings_are_kept_and_defaults_left_out() -> None:
    blob = encode(Message(role="user", content="", name=""))
    assert b'"n":""' in blob and b'"tc"' not in blob and b'"m"' not in blob
    assert decode("s", 1, blob).name == ""


def test_ids_keep_increasing_when_the_clock_steps_back(monkeypatch: pytest.MonkeyPatch) -> None:
    import chatledger._ids as ids_module

    start = new_id()
    # As if the wall clock had just jumped back a minute.
    monkeypatch.setattr(ids_module, "_last_ms", ids_module._last_ms + 60_000)
    later = [new_id() for _ in range(5000)]  # more than the 4096 a millisecond can count
    assert [start, *later] == sorted([start, *later])
    assert len(set(later)) == 5000


def test_decoding_fills_exactly_the_fields_of_a_message() -> None:
    from dataclasses import fields

    message = assistant("x", tool_calls=[{"id": "1", "name": "f", "args": {}}], name="n",
                        metadata={"k": [1]})
    decoded = decode("s", 3, encode(message))
    assert list(vars(decoded)) == [f.name for f in fields(Message)]
    assert decoded == message
    assert repr(decoded).startswith("Message(role='assistant'")


@given(st.datetimes(timezones=st.sampled_from([None, timezone.utc])))
def test_orjson_writes_naive_and_utc_datetimes_as_isoformat(stamp: datetime) -> None:
    import orjson

    assert orjson.dumps(stamp) == orjson.dumps(stamp.isoformat())
    assert decode("s", 1, encode(user("x", created_at=stamp))).created_at == stamp


def test_a_message_without_data_is_stored_exactly_as_before_data_existed() -> None:
    # The stored form of every entry written so far: databases and Redis keys read unchanged.
    stamp = datetime(2026, 1, 2, 3, 4, 5, 600000, tzinfo=timezone.utc)
    blob = encode(user("héllo", id="m1", created_at=stamp, metadata={"k": 1}))
    assert blob == (b'\x01{"r":"user","c":"h\xc3\xa9llo","i":"m1",'
                    b'"t":"2026-01-02T03:04:05.600000+00:00","m":{"k":1}}')
    assert decode("s", 1, blob).data is None


def test_data_is_stored_raw_after_a_length_prefixed_json_head() -> None:
    payload = bytes(range(256))
    blob = encode(user("x", id="m1", data=payload))
    head = len(blob) - 5 - len(payload)
    assert blob[:1] == FORMAT_V2 and int.from_bytes(blob[1:5], "big") == head
    assert blob[5:5 + head].startswith(b'{"r":"user"') and blob.endswith(payload)
    assert b"data" not in blob[5:5 + head]  # the format byte says there is data, not a key
    decoded = decode("s", 2, blob)
    assert decoded.data == payload and type(decoded.data) is bytes and decoded.seq == 2


def test_data_takes_part_in_equality() -> None:
    message = user("x", data=b"a")
    assert message != Message(role="user", content="x", id=message.id,
                              created_at=message.created_at, data=b"b")
    assert message != Message(role="user", content="x", id=message.id,
                              created_at=message.created_at)
    assert decode("s", 1, encode(message)) == message


def test_the_repr_gives_the_size_of_data_not_its_bytes() -> None:
    text = repr(user("x", data=b"\x00" * 5_000_000))
    assert "data=<5,000,000 bytes>" in text and len(text) < 400
    assert "data=<3 bytes>" in repr(user("x", data=memoryview(b"abc")))  # type: ignore[arg-type]
    assert "data=None" in repr(user("x"))


def test_data_is_keyword_only_so_positional_calls_keep_their_meaning() -> None:
    stamp = datetime(2026, 1, 1, tzinfo=timezone.utc)
    message = Message("user", "x", "id", None, [], None, {}, stamp, 5)  # every field, seq last
    assert (message.created_at, message.seq, message.data) == (stamp, 5, None)


def test_an_entry_lacking_a_field_names_the_field_not_the_bare_key() -> None:
    with pytest.raises(CorruptEntryError) as caught:
        decode("s", 4, b"\x01" + b'{"c": "hi", "i": "m1", "t": "2026-01-01T00:00:00"}')
    assert (caught.value.session, caught.value.seq) == ("s", 4)
    assert caught.value.reason == "its record has no field 'r'"


@pytest.mark.parametrize(("field", "reason"), [
    ('"m": [1, 2]', "its metadata is a list, not an object"),
    ('"m": "x"', "its metadata is a string, not an object"),
    ('"n": 5', "its name or tool call id is not text: 5, None"),
    ('"tci": {}', "its name or tool call id is not text: None, {}"),
    ('"c": ["text", 5]', "its content block 2 is a number, neither text nor an object"),
])
def test_an_entry_whose_fields_have_the_wrong_kind_is_corrupt(field: str, reason: str) -> None:
    """A damaged entry that still parses: every reader relies on these kinds (a budgeted
    read counts the text, a summary read looks into the metadata)."""
    body = json.loads('{"r": "user", "c": "hi", "i": "m1", "t": "2026-01-01T00:00:00"}')
    body.update(json.loads("{" + field + "}"))
    with pytest.raises(CorruptEntryError) as caught:
        decode("s", 3, FORMAT_V1 + json.dumps(body).encode())
    assert (caught.value.seq, caught.value.reason) == (3, reason)


def _nested(levels: int) -> dict[str, object]:
    """One JSON object ``levels`` objects deep (the object itself is level 1)."""
    value: dict[str, object] = {}
    for _ in range(levels - 1):
        value = {"x": value}
    return value


@pytest.mark.parametrize(("make", "field"), [
    (lambda value: user("x", metadata=value), "metadata"),
    (lambda value: user([value]), "content[0]"),
    (lambda value: assistant("", tool_calls=[{"id": "c", "name": "f", "args": value}]),
     "tool_calls[0]"),
])
def test_the_nesting_limit_is_64_levels_in_every_field(make: Any, field: str) -> None:
    """64 levels below the field's own object, in each field (metadata always took that)."""
    from chatledger import InvalidMessage, open_store

    with open_store("memory://") as store:
        session = store.session("s")
        session.append([make(_nested(65))])
        with pytest.raises(InvalidMessage, match="nests deeper than 64 levels") as refused:
            session.append([make(_nested(66))])
        assert refused.value.field.startswith(f"messages[0].{field}")
        assert session.read().version == 1


def test_a_float_subclass_is_refused_naming_its_field() -> None:
    from chatledger import InvalidMessage, open_store

    class Price(float):
        pass

    with open_store("memory://") as store, pytest.raises(InvalidMessage) as refused:
        store.session("s").append([user("x", metadata={"order": {"price": Price(9.5)}})])
    assert refused.value.field == "messages[0].metadata.order.price"
    assert "float subclass Price" in str(refused.value)
