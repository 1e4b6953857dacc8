"""Messages, ids and the codec, without a store."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from chatledger import Message, assistant, system, tool, user
from chatledger._ids import new_id
from chatledger.codec import FORMAT_V1, decode, encode


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
