"""Sessions in each layout the ids hash has had, laid down byte for byte.

Meta's ``ids`` field says which: none (every id by its text), ``2`` (a UUID id
by its packed 17 bytes, a field each) and ``3:<fields>:<buckets>`` (UUID ids
as records in buckets, scripts._INDEX). A session keeps the layout it was created in: the
store must read each, recognise its batches as stored, and refuse a batch
that mixes them with new ids.
"""

from __future__ import annotations

import pytest
import redis

from chatledger import InvalidMessage, Message, Store, assistant, user
from chatledger._backends.redis.calls import index_key
from chatledger._codec import encode
from tests.redis.conftest import BUCKET, OpenRedis, index_entries, keys_of, record

OldSession = tuple[Store, list[list[Message]]]
UUID = "0192f3c4-5a6b-7c8d-9e0f-1a2b3c4d5e6f"


def test_index_keys_pack_only_canonical_uuids() -> None:
    assert index_key(UUID) == b"\xff" + bytes.fromhex(UUID.replace("-", ""))
    for other in (UUID.upper(), UUID.replace("-", ""), f"{UUID} ", "order-1", "é" * 36):
        assert index_key(other) == other


@pytest.fixture
def old_session(open_redis: OpenRedis, raw: redis.Redis) -> OldSession:
    """Session "s" as the earlier layout stored two batches: text ids, no 'ids' in meta."""
    store = open_redis()
    first = [user("hello", id=UUID), assistant("hi", id="answer-1")]
    second = [user("again", id="0192f3c4-5a6b-7c8d-9e0f-000000000002")]
    keys = keys_of(store, "s")
    raw.rpush(keys.log, *(encode(m) for m in first + second))
    raw.hset(keys.ids, mapping={UUID: "1:1:2", "answer-1": "2:1:2", second[0].id: "3:3:3"})
    raw.hset(keys.meta, mapping={"version": "3", "first_seq": "1", "updated": "1.5",
                                 "created": "1.0", "ledger": "abcdef0123456789"})
    return store, [first, second]


def test_an_old_session_reads_and_its_batches_stay_stored(
    old_session: OldSession, raw: redis.Redis
) -> None:
    store, (first, second) = old_session
    session = store.session("s")
    assert [m.text for m in session.read().messages] == ["hello", "hi", "again"]
    ack = session.append(first)
    # the original Ack: seqs 1-2, the session then at version 2
    assert (ack.first_seq, ack.last_seq, ack.version, ack.deduplicated) == (1, 2, 2, True)
    assert session.append(second).deduplicated
    new = [user("new", id="0192f3c4-5a6b-7c8d-9e0f-000000000004")]
    assert session.append(new).first_seq == 4
    # The old batches are still recognised after a new-layout append to the same session.
    assert session.append(first).deduplicated and session.append(new).deduplicated
    with pytest.raises(InvalidMessage):
        session.append([first[0], user("mixed in")])
    assert raw.hget(keys_of(store, "s").ids, index_key(new[0].id)) == b"4:4:4"
    info = session.info()
    assert info is not None and info.version == 4


@pytest.fixture
def compact_session(open_redis: OpenRedis, raw: redis.Redis) -> OldSession:
    """Session "s" as the layout before buckets stored it (meta ids=2): a UUID id's
    field is 0xFF and its 16 bytes, any other id's field its text."""
    store = open_redis()
    first = [user("hello", id=UUID), assistant("hi", id="answer-1")]
    second = [user("again", id="0192f3c4-5a6b-7c8d-9e0f-000000000002")]
    keys = keys_of(store, "s")
    raw.rpush(keys.log, *(encode(m) for m in first + second))
    raw.hset(keys.ids, mapping={index_key(UUID): "1:1:2", "answer-1": "2:1:2",
                                index_key(second[0].id): "3:3:3"})
    raw.hset(keys.meta, mapping={"version": "3", "first_seq": "1", "updated": "1.5",
                                 "created": "1.0", "ledger": "abcdef0123456789", "ids": "2"})
    return store, [first, second]


def test_a_compact_session_keeps_its_layout_and_its_batches(
    compact_session: OldSession, raw: redis.Redis
) -> None:
    store, (first, second) = compact_session
    session, keys = store.session("s"), keys_of(store, "s")
    assert [m.text for m in session.read().messages] == ["hello", "hi", "again"]
    assert session.append(first).deduplicated and session.append(second).deduplicated
    new = [user("new"), assistant("reply", id="answer-2")]
    ack = session.append(new)
    assert (ack.first_seq, ack.last_seq) == (4, 5)
    # Still one field per id, as the layout it was written in: no bucket appears.
    assert raw.hget(keys.ids, index_key(new[0].id)) == b"4:4:5"
    assert not [name for name in raw.hkeys(keys.ids) if name.startswith(BUCKET)]
    assert raw.hget(keys.meta, "ids") == b"2"
    for batch in (first, second, new):
        assert session.append(batch).deduplicated
    with pytest.raises(InvalidMessage):
        session.append([second[0], new[0]])


@pytest.fixture
def bucketed_session(open_redis: OpenRedis, raw: redis.Redis) -> OldSession:
    """Session "s" in the bucketed layout (meta ids=3:<fields>:<buckets>), laid down byte
    for byte: one bucket holding the UUID ids' records, a field of its own for the text id."""
    store = open_redis()
    first = [user("hello", id=UUID), assistant("hi", id="answer-1")]
    second = [user("again", id="0192f3c4-5a6b-7c8d-9e0f-000000000002")]
    keys = keys_of(store, "s")
    raw.rpush(keys.log, *(encode(m) for m in first + second))

    raw.hset(keys.ids, mapping={b"\xfe0": record(UUID, 1, 1, 2) + record(second[0].id, 3, 3, 3),
                                "answer-1": "2:1:2"})
    raw.hset(keys.meta, mapping={"version": "3", "first_seq": "1", "updated": "1.5",
                                 "created": "1.0", "ledger": "abcdef0123456789",
                                 "ids": "3:2:1"})
    return store, [first, second]


def test_a_bucketed_session_laid_down_by_hand_reads_and_deduplicates(
    bucketed_session: OldSession, raw: redis.Redis
) -> None:
    store, (first, second) = bucketed_session
    session, keys = store.session("s"), keys_of(store, "s")
    assert [m.text for m in session.read().messages] == ["hello", "hi", "again"]
    ack = session.append(first)
    assert (ack.first_seq, ack.last_seq, ack.version, ack.deduplicated) == (1, 2, 2, True)
    assert session.append(second).deduplicated
    new = [user("new", id="0192f3c4-5a6b-7c8d-9e0f-000000000004")]
    assert session.append(new).first_seq == 4
    assert index_entries(raw, keys)[index_key(new[0].id)] == b"4:4:4"
    assert raw.hget(keys.meta, "ids") == b"3:2:1"  # still 2 fields, 1 of them a bucket
    with pytest.raises(InvalidMessage):
        session.append([first[0], user("mixed in")])


def test_a_new_session_buckets_uuid_ids_and_marks_it(open_redis: OpenRedis,
                                                     raw: redis.Redis) -> None:
    store = open_redis()
    message, named = user("packed"), user("named", id="order-1")
    store.session("s").append([message, named])
    keys = keys_of(store, "s")
    assert sorted(raw.hkeys(keys.ids)) == [b"order-1", b"\xfe0"]
    assert index_entries(raw, keys) == {index_key(message.id): b"1:1:2", b"order-1": b"2:1:2"}
    assert raw.hget(keys.meta, "ids") == b"3:2:1"
    # A field with the same id, as an older layout would have written it, is not
    # consulted in a bucketed session: the bucket decides.
    assert store.session("s").append([message, named]).deduplicated
