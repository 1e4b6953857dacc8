"""The bucketed ids index (meta ids=3:<fields>:<buckets>): UUID ids as 26-byte records in buckets that
grow by linear hashing (scripts._INDEX), every other id a field of its own.

What must hold at any size: every stored id is in the bucket its address names,
every bucket exists, the hash holds as many fields as meta says (the integrity
check), every batch ever stored is still its own retry, and nothing
of the index outlives the session.
"""

from __future__ import annotations

import random
import struct
import uuid

import pytest
import redis

from chatledger import InvalidMessage, Message, MemoryLostError, Session, Store, assistant, user
from chatledger._backends.redis.calls import index_key
from tests.redis.conftest import BUCKET, RECORD, OpenRedis, index_entries, keys_of, scan_all

LOAD = 64  # records per bucket before the index grows by one (scripts._INDEX)


def address(h: int, buckets: int) -> int:
    """The bucket of an id whose last four bytes are ``h``, among ``buckets``."""
    power = 1 << (buckets.bit_length() - 1)
    at = h % (2 * power)
    return at if at < buckets else h % power


def check_index(raw: redis.Redis, store: Store, session: str) -> dict[int, int]:
    """Assert the index's invariants; return the number of records per bucket."""
    keys = keys_of(store, session)
    version, layout = raw.hmget(keys.meta, "version", "ids")
    tag, count, buckets = layout.split(b":")
    assert tag == b"3"
    fields = raw.hgetall(keys.ids)
    assert len(fields) == int(count)
    packed = int(version) - (int(count) - int(buckets))
    buckets = int(buckets)
    sizes = {}
    for number in range(buckets):
        value = fields[BUCKET + str(number).encode()]  # every bucket exists
        assert len(value) % RECORD == 0
        sizes[number] = len(value) // RECORD
        for at in range(0, len(value), RECORD):
            (h,) = struct.unpack(">I", value[at + 4 : at + 8])  # the id's last four bytes
            assert address(h, buckets) == number
    assert sum(sizes.values()) == packed
    return sizes


def uuids(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(count)]


def pair(ids: list[str], n: int) -> list[Message]:
    return [user(f"q{n}", id=ids[2 * n]), assistant(f"a{n}", id=ids[2 * n + 1])]


def test_the_index_grows_and_every_batch_stays_its_own_retry(open_redis: OpenRedis,
                                                             raw: redis.Redis) -> None:
    store = open_redis()
    session = store.session("s")
    ids = uuids(2000, seed=1)
    batches = [pair(ids, n) for n in range(1000)]
    for batch in batches:
        session.append(batch)
    sizes = check_index(raw, store, "s")
    assert len(sizes) >= 2000 // LOAD
    # linear hashing keeps every bucket small enough for a listpack-sized scan
    assert max(sizes.values()) <= 3 * LOAD
    for n in (0, 1, 499, 998, 999):
        ack = session.append(batches[n])
        assert (ack.first_seq, ack.last_seq, ack.deduplicated) == (2 * n + 1, 2 * n + 2, True)
    with pytest.raises(InvalidMessage, match="retry a batch whole"):
        session.append([batches[3][0], user("new")])
    assert session.read().version == 2000


def test_sequential_uuids_and_one_large_batch_spread_too(open_redis: OpenRedis,
                                                         raw: redis.Redis) -> None:
    store = open_redis()
    session = store.session("s")
    batch = [user(f"m{n}", id=str(uuid.UUID(int=n))) for n in range(3000)]
    assert session.append(batch).last_seq == 3000
    sizes = check_index(raw, store, "s")
    assert max(sizes.values()) <= 2 * LOAD
    retried = session.append(batch)
    assert (retried.first_seq, retried.last_seq, retried.deduplicated) == (1, 3000, True)
    more = [user("next", id=str(uuid.UUID(int=3000)))]
    assert session.append(more).first_seq == 3001
    check_index(raw, store, "s")


def test_text_and_uuid_ids_in_one_batch(open_redis: OpenRedis, raw: redis.Redis) -> None:
    store = open_redis()
    session = store.session("s")
    batch = [user("a", id="order-1"), assistant("b"), user("c", id="order-2")]
    session.append(batch)
    entries = index_entries(raw, keys_of(store, "s"))
    assert entries == {b"order-1": b"1:1:3", index_key(batch[1].id): b"2:1:3",
                       b"order-2": b"3:1:3"}
    assert session.append(batch).deduplicated
    with pytest.raises(InvalidMessage, match="not as the whole batch"):
        session.append(batch[1:])
    check_index(raw, store, "s")


def test_a_lost_bucket_makes_the_session_damaged(open_redis: OpenRedis,
                                                 raw: redis.Redis) -> None:
    store = open_redis()
    session = store.session("s")
    ack = session.append([user("a"), user("b")])
    assert raw.hdel(keys_of(store, "s").ids, BUCKET + b"0") == 1
    with pytest.raises(MemoryLostError):
        session.read(min_version=ack.version)
    assert session.info() is None


def _fill(session: Session, count: int) -> None:
    for n in range(0, count, 50):
        session.append([user(f"m{k}", id=f"text-{k}") if k % 7 == 0 else user(f"m{k}")
                        for k in range(n, n + 50)])


def test_trim_keeps_the_index_and_delete_forget_purge_leave_nothing(
    open_redis: OpenRedis, raw: redis.Redis
) -> None:
    store = open_redis()
    _fill(store.session("trimmed"), 300)
    before = index_entries(raw, keys_of(store, "trimmed"))
    assert store.session("trimmed").trim(keep_last=10) == 290
    # ids are never trimmed: a retry of a trimmed batch is still recognised
    assert index_entries(raw, keys_of(store, "trimmed")) == before
    check_index(raw, store, "trimmed")
    for name in ("deleted", "purged-1", "purged-2"):
        _fill(store.session(name), 300)
    tagged = store.session("owned", user="ann")
    _fill(tagged, 100)
    assert store.session("deleted").delete()
    assert store.forget_user("ann").deleted == ("owned",)
    assert store.purge(prefix="purged-") == 2
    ours = scan_all(raw, f"chatledger:{{{store.namespace}:*")
    assert ours == set(keys_of(store, "trimmed"))
