"""What the Lua scripts do on a real server: atomic checks, windows, expiry, damage."""

from __future__ import annotations

import time

import pytest
import redis

from chatledger import (
    BackendError,
    ConflictError,
    InvalidMessage,
    MemoryLostError,
    StoreOptions,
    assistant,
    user,
)
from chatledger._backends.contract import Batch, ReadQuery
from chatledger._backends.redis import scripts
from chatledger._backends.redis.calls import Calls, index_key
from chatledger._backends.redis.keys import glob_escape
from tests.redis.conftest import OpenRedis, keys_of, scan_all


def test_a_flushed_script_cache_is_refilled_by_the_next_call(
    open_redis: OpenRedis, raw: redis.Redis
) -> None:
    store = open_redis()
    session = store.session("s")
    session.append([user("before the flush")])
    raw.script_flush()
    assert raw.script_exists(scripts.APPEND.sha) == [False]
    ack = session.append([user("after the flush")])
    assert (ack.first_seq, ack.deduplicated) == (2, False)
    assert raw.script_exists(scripts.APPEND.sha) == [True]
    raw.script_flush()
    assert [m.text for m in session.read()] == ["before the flush", "after the flush"]
    raw.script_flush()
    assert store.purge() == 1  # a pipeline of deletes loads its script first


def test_windows_match_read_query_window(open_redis: OpenRedis) -> None:
    store = open_redis()
    session = store.session("s")
    session.append([user(f"m{seq}") for seq in range(1, 11)])
    session.trim(keep_last=7)  # seqs 4..10 remain
    queries = [ReadQuery(last=n) for n in (0, 1, 3, 7, 8, 20)] + [
        ReadQuery(after=after, limit=limit)
        for after in (0, 2, 3, 4, 8, 10, 12) for limit in (None, 0, 1, 3, 100)
    ]
    for query in queries:
        low, count = query.window(10, 4)
        expected = list(range(low, 11))[:count]
        history = session.read(last=query.last) if query.last is not None else \
            session.read(after=query.after, limit=query.limit)
        assert [m.seq for m in history] == expected, query
        assert [m.text for m in history] == [f"m{seq}" for seq in expected]
        assert (history.version, history.first_seq) == (10, 4)


def test_a_batch_larger_than_a_script_chunk_is_stored_whole(open_redis: OpenRedis,
                                                            raw: redis.Redis) -> None:
    store = open_redis()
    session = store.session("s")
    batch = [user(f"m{n}") for n in range(2500)]
    assert session.append(batch).last_seq == 2500
    assert raw.hlen(keys_of(store, "s").ids) == 2500
    retried = session.append(batch)
    assert (retried.first_seq, retried.last_seq, retried.deduplicated) == (1, 2500, True)
    assert [m.text for m in session.read(after=2495)] == [f"m{n}" for n in range(2495, 2500)]


def test_a_batch_mixing_stored_and_new_ids_writes_nothing(open_redis: OpenRedis) -> None:
    session = open_redis().session("s")
    stored = user("stored")
    session.append([stored, assistant("reply")])
    with pytest.raises(InvalidMessage, match="retry a batch whole"):
        session.append([stored, user("new")])
    with pytest.raises(InvalidMessage, match="not as the whole batch"):
        session.append([stored])
    assert session.read().version == 2


def test_text_is_stored_as_utf8_not_escapes(open_redis: OpenRedis, raw: redis.Redis) -> None:
    store = open_redis()
    store.session("s").append([user("grüße 😀 注文")])
    entry = raw.lindex(keys_of(store, "s").log, 0)
    assert isinstance(entry, bytes)
    assert "grüße 😀 注文".encode() in entry
    assert b"\\u" not in entry


@pytest.mark.parametrize("lost", ["meta", "log", "ids"])
def test_a_session_missing_any_key_counts_as_lost_and_restarts_clean(
    open_redis: OpenRedis, raw: redis.Redis, lost: str
) -> None:
    store = open_redis()
    session = store.session("s")
    ack = session.append([user("a"), user("b")])
    keys = keys_of(store, "s")
    assert raw.delete(getattr(keys, lost)) == 1
    with pytest.raises(MemoryLostError) as caught:
        session.read(last=10, min_version=ack.version)
    assert (caught.value.expected, caught.value.found) == (2, 0)
    assert session.info() is None
    assert session.delete() is False
    ack = session.append([user("c")])
    assert (ack.first_seq, ack.version) == (1, 1)
    assert [m.text for m in session.read()] == ["c"]
    assert raw.llen(keys.log) == raw.hlen(keys.ids) == 1  # no leftovers of the torn ledger


def test_a_refused_append_keeps_what_eviction_left(open_redis: OpenRedis,
                                                   raw: redis.Redis) -> None:
    store = open_redis()
    store.session("s").append([user("a"), user("b")])
    keys = keys_of(store, "s")
    raw.delete(keys.ids)  # as if evicted: the log is still there to recover by hand
    with pytest.raises(ConflictError):
        store.session("s").append([user("c")], expect_version=2)
    assert raw.llen(keys.log) == 2
    assert store.session("s").append([user("c")], expect_version=0).version == 1
    assert raw.llen(keys.log) == 1


def test_trimming_everything_keeps_the_session_and_its_version(
    open_redis: OpenRedis, raw: redis.Redis
) -> None:
    store = open_redis()
    session = store.session("s")
    session.append([user("a"), user("b")])
    assert session.trim(keep_last=0) == 2
    assert raw.exists(keys_of(store, "s").log) == 0
    info = session.info()
    assert info is not None and (info.version, info.count, info.first_seq) == (2, 0, 3)
    assert session.append([user("c")]).first_seq == 3
    assert [m.seq for m in session.read()] == [3]


def _pttls(client: redis.Redis, keys: object) -> list[int]:
    return [client.pttl(key) for key in keys]  # type: ignore[attr-defined]


def test_every_key_gets_the_same_expiry_and_only_writes_renew_it(
    open_redis: OpenRedis, raw: redis.Redis
) -> None:
    store = open_redis(ttl=10)
    session = store.session("s")
    session.append([user("a"), user("b")])
    keys = keys_of(store, "s")
    pttls = _pttls(raw, keys)
    assert all(9_000 < p <= 10_000 for p in pttls) and max(pttls) - min(pttls) < 100
    for key in keys:
        raw.pexpire(key, 5_000)
    session.trim(keep_last=1)
    session.read()
    assert all(p <= 5_000 for p in _pttls(raw, keys)), "trim or a plain read renewed the TTL"
    info = session.info()
    assert info is not None and info.expires_at is not None
    assert (info.expires_at - info.updated_at).total_seconds() < 6, "PTTL was ignored"
    session.append([user("c")])
    assert all(p > 9_000 for p in _pttls(raw, keys))


def test_an_expiry_set_by_hand_shows_in_info(open_redis: OpenRedis, raw: redis.Redis) -> None:
    store = open_redis()
    store.session("s").append([user("a")])
    for key in keys_of(store, "s"):
        raw.pexpire(key, 5_000)
    info = store.session("s").info()
    assert info is not None and info.expires_at is not None
    assert 4 < (info.expires_at - info.updated_at).total_seconds() < 6


def test_touch_on_read_renews_every_key(open_redis: OpenRedis, raw: redis.Redis) -> None:
    store = open_redis(ttl=10, touch_on_read=True)
    session = store.session("s")
    session.append([user("a")])
    keys = keys_of(store, "s")
    for key in keys:
        raw.pexpire(key, 5_000)
    session.read(last=1)
    assert all(p > 9_000 for p in _pttls(raw, keys))


def test_a_store_without_ttl_makes_the_session_persistent(open_redis: OpenRedis,
                                                          raw: redis.Redis) -> None:
    open_redis(ttl=10).session("s").append([user("a")])
    forever = open_redis()
    forever.session("s").append([user("b")])
    assert _pttls(raw, keys_of(forever, "s")) == [-1, -1, -1]
    info = forever.session("s").info()
    assert info is not None and info.expires_at is None


def test_an_expired_session_leaves_no_key_behind(open_redis: OpenRedis, raw: redis.Redis) -> None:
    store = open_redis(ttl=0.2)
    store.session("s").append([user("a"), user("b")])
    store.session("s").trim(keep_last=1)
    tag = glob_escape(f"chatledger:{{{store.namespace}:") + "*"
    assert len(scan_all(raw, tag)) == 3
    deadline = time.monotonic() + 5
    while scan_all(raw, tag) and time.monotonic() < deadline:
        time.sleep(0.05)  # polling: the server expires the keys on its own clock
    assert scan_all(raw, tag) == set()
    assert store.session("s").info() is None
    assert list(store.sessions()) == []


def test_an_unreadable_id_record_is_a_backend_error(open_redis: OpenRedis,
                                                    raw: redis.Redis) -> None:
    store = open_redis()
    message = user("a")
    store.session("s").append([message])
    raw.hset(keys_of(store, "s").ids, index_key(message.id), "garbage")
    with pytest.raises(BackendError, match="unreadable message id record"):
        store.session("s").append([message])


def test_a_reply_no_script_gives_is_a_backend_error() -> None:
    call = Calls(StoreOptions()).append("s", Batch(ids=["1"], blobs=[b"x"]))
    with pytest.raises(BackendError, match="unexpected reply to the append script"):
        call.parse([b"what", 1])


def test_a_closed_store_refuses_to_work(open_redis: OpenRedis) -> None:
    store = open_redis()
    store.session("s").append([user("a")])
    store.close()
    for operation in (lambda: store.session("s").read(), lambda: list(store.sessions()),
                      lambda: store.purge()):
        with pytest.raises(BackendError, match="is closed"):
            operation()
