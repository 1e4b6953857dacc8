"""The key layout: escaping, one hash tag per session, SCAN patterns taken literally."""

from __future__ import annotations

import pytest
import redis
from hypothesis import given
from hypothesis import strategies as st

from chatledger import BackendError, Store, user
from chatledger._backends.redis.calls import SessionScan
from chatledger._backends.redis.keys import (
    SessionKeys,
    escape,
    glob_escape,
    meta_pattern,
    session_of,
    unescape,
)
from tests.redis.conftest import OpenRedis, keys_of, scan_all

NASTY = ["a", "a:b", "b:c", "{", "}", "{x}", "}{", "%", "%7B", "*", "?", "[a-z]", "\\", "_",
         "ä", "😀", "a b", "\n", ":"]
text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=20)


def _hash_tag(key: bytes) -> bytes:
    """The part of a key Redis Cluster hashes: between the first { and the next }."""
    start = key.index(b"{")
    return key[start + 1 : key.index(b"}", start + 1)]


@given(text)
def test_escaping_round_trips(value: str) -> None:
    escaped = escape(value)
    assert unescape(escaped) == value
    assert not set("{}:") & set(escaped)


@given(text, text)
def test_escaping_keeps_prefixes_and_only_them(value: str, prefix: str) -> None:
    assert escape(value).startswith(escape(prefix)) == value.startswith(prefix)


@pytest.mark.parametrize("garbage", ["%", "%41", "%7b", "a{", "a}", "a:b", "100%"])
def test_unescape_refuses_what_escape_never_makes(garbage: str) -> None:
    assert unescape(garbage) is None


def test_glob_escape_takes_glob_characters_literally() -> None:
    assert glob_escape(r"a*b?c[d]e\f") == r"a\*b\?c\[d\]e\\f"


@pytest.mark.parametrize("namespace", NASTY)
@pytest.mark.parametrize("session", NASTY)
def test_every_key_of_a_session_carries_the_same_unambiguous_tag(
    namespace: str, session: str
) -> None:
    keys = SessionKeys.of(namespace, session)
    tags = {_hash_tag(key) for key in keys}
    assert tags == {f"{escape(namespace)}:{escape(session)}".encode()}
    assert [key.rsplit(b":", 1)[1] for key in keys] == [b"meta", b"log", b"ids"]
    assert session_of(keys.meta, namespace, "") == session
    assert session_of(keys.meta, namespace + "x", "") is None
    assert session_of(keys.log, namespace, "") is None
    assert session_of(keys.log, namespace, "", every_key=True) == session
    assert session_of(keys.ids, namespace, "", every_key=True) == session
    assert session_of(keys.meta, namespace, session + "x") is None


def test_namespace_and_session_never_blur() -> None:
    pairs = [("a:b", "c"), ("a", "b:c"), ("a{", "b"), ("a", "{b"), ("a}", "b"), ("a", "}b")]
    tags = {_hash_tag(SessionKeys.of(ns, sid).meta) for ns, sid in pairs}
    assert len(tags) == len(pairs)


def test_keys_on_the_server_are_the_three_expected(open_redis: OpenRedis,
                                                   raw: redis.Redis) -> None:
    store = open_redis(namespace="ns:{*}?[\\]")
    for session in NASTY:
        store.session(session).append([user(f"I am {session!r}")])
    ours = scan_all(raw, glob_escape(f"chatledger:{{{escape(store.namespace)}:") + "*")
    assert ours == {key for session in NASTY for key in keys_of(store, session)}
    assert sorted(store.sessions()) == sorted(NASTY)
    for session in NASTY:
        assert store.session(session).read().messages[0].text == f"I am {session!r}"


def test_keys_that_only_match_the_pattern_are_ignored_and_kept(
    open_redis: OpenRedis, raw: redis.Redis
) -> None:
    store = open_redis()
    store.session("ab").append([user("mine")])
    head = f"chatledger:{{{store.namespace}:".encode()
    foreign = [head + b"a}:log}:meta", head + b"a%ZZ}:meta", head + b"a\xff}:meta",
               head + b"a{b}:meta"]
    for key in foreign:
        assert raw.set(key, b"not a session")
    # The pattern lets them through: only decoding the key tells them apart.
    assert set(foreign) <= scan_all(raw, meta_pattern(store.namespace, "a"))
    assert list(store.sessions(prefix="a")) == ["ab"]
    assert store.purge(prefix="a") == 1
    assert all(raw.exists(key) for key in foreign)


def test_sessions_come_in_pages_and_purge_unlinks_them_all(
    open_redis: OpenRedis, raw: redis.Redis
) -> None:
    store = open_redis()
    with raw.pipeline(transaction=False) as pipe:  # a fast setup of 1,500 one-entry sessions
        for n in range(1500):
            keys = keys_of(store, f"s{n:04}")
            pipe.hset(keys.meta, mapping={"version": 1, "first_seq": 1, "ledger": "L"})
            pipe.rpush(keys.log, b"entry")
            pipe.hset(keys.ids, "id", "1:1:1")
        pipe.execute()
    first = store._backend.list_sessions("", None)
    assert first.cursor is not None and len(first.ids) < 1500
    listed = list(store.sessions())
    assert len(listed) == len(set(listed)) == 1500
    assert store.purge() == 1500
    assert scan_all(raw, glob_escape(f"chatledger:{{{store.namespace}:") + "*") == set()


@pytest.mark.parametrize("cursor", ["abc", "-5", "1.5"])
def test_a_cursor_that_scan_never_gave_is_refused(store_for_cursor: Store, cursor: str) -> None:
    with pytest.raises(BackendError, match="not a Redis SCAN cursor"):
        store_for_cursor._backend.list_sessions("", cursor)


@pytest.fixture
def store_for_cursor(open_redis: OpenRedis) -> Store:
    return open_redis()


def test_a_scan_reports_each_session_once_even_when_scan_repeats_keys() -> None:
    scan = SessionScan("ns", "", 0)
    meta = SessionKeys.of("ns", "s").meta
    assert scan.feed(7, [meta, meta]) == ["s"]
    assert scan.feed(0, [meta]) == []
    assert scan.done
    page = scan.page()
    assert (page.ids, page.cursor) == (["s"], None)


def test_purge_removes_what_eviction_left_of_a_session(open_redis: OpenRedis,
                                                       raw: redis.Redis) -> None:
    store = open_redis()
    store.session("user-1").append([user("my card is 4111 1111 1111 1111")])
    store.session("user-2").append([user("intact")])
    raw.delete(keys_of(store, "user-1").meta)  # evicted: the log with its content remains
    assert store.purge(prefix="user-") == 1  # the intact one; the torn one goes too
    assert not scan_all(raw, f"chatledger:{{{store.namespace}:*")


def test_data_is_stored_as_raw_bytes_in_the_log(open_redis: OpenRedis, raw: redis.Redis) -> None:
    store = open_redis()
    payload = bytes(range(256)) * 8
    store.session("s").append([user("a file", data=payload), user("plain")])
    with_data, plain = raw.lrange(keys_of(store, "s").log, 0, -1)
    assert with_data[:1] == b"\x02" and with_data.endswith(payload)
    assert len(with_data) < len(payload) + 200  # no base64, no escaping: its own size
    assert plain[:1] == b"\x01"
