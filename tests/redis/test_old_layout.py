"""Sessions in each layout the ids hash has had, laid down byte for byte.

Meta's ``ids`` field says which: none (earlier versions: every id by its text)
or ``2`` (a UUID id by its packed 17 bytes). The client sends each id once, as
``index_key`` names it; in a session of the earlier layout the APPEND script
also looks a UUID up by its canonical text, which it makes itself. The store
must read each layout, recognise its batches as stored, and refuse a batch that
mixes them with new ids.
"""

from __future__ import annotations

import pytest
import redis

from chatledger import InvalidMessage, Message, Store, assistant, user
from chatledger._backends.redis.calls import index_key
from chatledger._codec import encode
from tests.redis.conftest import OpenRedis, keys_of

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
    """Session "s" as the current layout stores it (meta ids=2): a UUID id's field is
    0xFF and its 16 bytes, any other id's field its text."""
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


def test_a_compact_session_reads_and_deduplicates_its_batches(
    compact_session: OldSession, raw: redis.Redis
) -> None:
    store, (first, second) = compact_session
    session, keys = store.session("s"), keys_of(store, "s")
    assert [m.text for m in session.read().messages] == ["hello", "hi", "again"]
    assert session.append(first).deduplicated and session.append(second).deduplicated
    new = [user("new"), assistant("reply", id="answer-2")]
    ack = session.append(new)
    assert (ack.first_seq, ack.last_seq) == (4, 5)
    # One field per id, named as the layout says.
    assert raw.hget(keys.ids, index_key(new[0].id)) == b"4:4:5"
    assert raw.hget(keys.meta, "ids") == b"2"
    for batch in (first, second, new):
        assert session.append(batch).deduplicated
    with pytest.raises(InvalidMessage):
        session.append([second[0], new[0]])


def test_a_new_session_keys_uuids_packed_and_marks_it(open_redis: OpenRedis,
                                                      raw: redis.Redis) -> None:
    store = open_redis()
    message = user("packed")
    store.session("s").append([message])
    keys = keys_of(store, "s")
    assert raw.hkeys(keys.ids) == [index_key(message.id)]
    assert raw.hget(keys.meta, "ids") == b"2"
    # A text field with the same id, as an older version would have written it,
    # is not consulted in a session marked compact: the packed field decides.
    assert store.session("s").append([message]).deduplicated
