"""A session's ids hash, laid down byte for byte: how each id is named.

A UUID id's field is 0xFF and its 16 bytes (``index_key``), any other id's
field its text. The client sends each id once, as ``index_key`` names it; the
store must read such a session, recognise its batches as stored, and refuse a
batch that mixes them with new ids.
"""

from __future__ import annotations

import pytest
import redis

from chatledger import InvalidMessage, Message, Store, assistant, user
from chatledger._backends.redis.calls import index_key
from chatledger._codec import encode
from tests.redis.conftest import OpenRedis, keys_of

LaidSession = tuple[Store, list[list[Message]]]
UUID = "0192f3c4-5a6b-7c8d-9e0f-1a2b3c4d5e6f"


def test_index_keys_pack_only_canonical_uuids() -> None:
    assert index_key(UUID) == b"\xff" + bytes.fromhex(UUID.replace("-", ""))
    for other in (UUID.upper(), UUID.replace("-", ""), f"{UUID} ", "order-1", "é" * 36):
        assert index_key(other) == other


def _lay_down(open_redis: OpenRedis, raw: redis.Redis, meta: dict[str, str]) -> LaidSession:
    """Session "s" with two batches, its meta as given."""
    store = open_redis()
    first = [user("hello", id=UUID), assistant("hi", id="answer-1")]
    second = [user("again", id="0192f3c4-5a6b-7c8d-9e0f-000000000002")]
    keys = keys_of(store, "s")
    raw.rpush(keys.log, *(encode(m) for m in first + second))
    raw.hset(keys.ids, mapping={index_key(UUID): "1:1:2", "answer-1": "2:1:2",
                                index_key(second[0].id): "3:3:3"})
    raw.hset(keys.meta, mapping=meta)
    return store, [first, second]


@pytest.fixture
def laid_session(open_redis: OpenRedis, raw: redis.Redis) -> LaidSession:
    return _lay_down(open_redis, raw, {"version": "3", "first_seq": "1", "updated": "1.5",
                                       "created": "1.0", "ledger": "abcdef0123456789"})


def test_a_session_reads_and_deduplicates_its_batches(
    laid_session: LaidSession, raw: redis.Redis
) -> None:
    store, (first, second) = laid_session
    session, keys = store.session("s"), keys_of(store, "s")
    assert [m.text for m in session.read().messages] == ["hello", "hi", "again"]
    assert session.append(first).deduplicated and session.append(second).deduplicated
    new = [user("new"), assistant("reply", id="answer-2")]
    ack = session.append(new)
    assert (ack.first_seq, ack.last_seq, ack.ledger) == (4, 5, "abcdef0123456789")
    # One field per id, named as the layout says.
    assert raw.hget(keys.ids, index_key(new[0].id)) == b"4:4:5"
    for batch in (first, second, new):
        assert session.append(batch).deduplicated
    with pytest.raises(InvalidMessage):
        session.append([second[0], new[0]])


def test_a_new_session_keys_uuids_packed_and_records_no_layout_marker(
        open_redis: OpenRedis, raw: redis.Redis) -> None:
    store = open_redis()
    message = user("packed")
    store.session("s").append([message])
    keys = keys_of(store, "s")
    assert raw.hkeys(keys.ids) == [index_key(message.id)]
    assert set(raw.hkeys(keys.meta)) == {b"version", b"first_seq", b"updated", b"created",
                                         b"ledger"}
    assert store.session("s").append([message]).deduplicated


def test_a_meta_without_a_ledger_id_is_a_damaged_session(open_redis: OpenRedis,
                                                          raw: redis.Redis) -> None:
    """Every session this code writes has a ledger id: one without is what a hand or
    a partial eviction left, read as absent and replaced whole by the next append."""
    store, (first, _) = _lay_down(open_redis, raw, {"version": "3", "first_seq": "1",
                                                    "updated": "1.5", "created": "1.0"})
    session = store.session("s")
    assert session.read().version == 0 and session.info() is None
    ack = session.append(first)
    assert (ack.first_seq, ack.version, ack.deduplicated) == (1, 2, False)
    assert [m.text for m in session.read().messages] == ["hello", "hi"]
