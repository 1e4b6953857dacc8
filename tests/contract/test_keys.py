"""Promise 9: namespaces isolate, and ids and prefixes are data, never patterns."""

from __future__ import annotations

import uuid

import pytest

from chatledger import ConfigError, Store, user
from tests.conftest import OpenLedger

NASTY = ["a*", "a*b", "a?", "a[1]", "a]", "a%", "a_", "a\\", "a:b", "a:", "ä", "a☃", "a𝄞", "a",
         "a\ud7ff", "a\ud7ffz", "a\ue000", "a\U0010ffff", "a\U0010ffffz", "b"]


def _create(store: Store, ids: list[str]) -> None:
    for session_id in ids:
        store.session(session_id).append([user(f"I am {session_id}")])


def test_sessions_lists_ids_in_order(store: Store) -> None:
    _create(store, ["b", "a", "c"])
    assert sorted(store.sessions()) == ["a", "b", "c"]
    assert list(store.sessions(prefix="b")) == ["b"]


@pytest.mark.parametrize(
    "prefix", ["a*", "a?", "a[", "a]", "a%", "a_", "a\\", "a:", "ä", "a☃", "a\ud7ff", "a\U0010ffff"]
)
def test_prefixes_match_literally(store: Store, prefix: str) -> None:
    _create(store, NASTY)
    expected = sorted(i for i in NASTY if i.startswith(prefix))
    assert sorted(store.sessions(prefix=prefix)) == expected
    assert store.purge(prefix=prefix) == len(expected)
    assert sorted(store.sessions()) == sorted(i for i in NASTY if not i.startswith(prefix))


def test_nasty_ids_round_trip(store: Store) -> None:
    _create(store, NASTY)
    for session_id in NASTY:
        assert store.session(session_id).read().messages[0].text == f"I am {session_id}"


def test_a_message_id_may_hold_nul(store: Store) -> None:
    """Stored as data (PostgreSQL: bytea), never as a key's text: kept, and deduplicated."""
    session = store.session("s")
    first = session.append([user("x", id="m\x00a"), user("y", id="m\x00b")])
    again = session.append([user("x", id="m\x00a"), user("y", id="m\x00b")])
    assert again.deduplicated and (again.first_seq, again.last_seq) == (1, 2)
    assert [m.id for m in session.read()] == ["m\x00a", "m\x00b"]
    assert first.version == session.read().version == 2


def test_namespaces_are_invisible_to_each_other(open_ledger: OpenLedger) -> None:
    run = uuid.uuid4().hex[:8]  # the server outlives this test: names of its own
    red, blue, blue_star = (open_ledger(namespace=f"{run}red"), open_ledger(namespace=f"{run}blue"),
                            open_ledger(namespace=f"{run}blu*"))
    _create(red, ["x", "y"])
    _create(blue, ["x"])
    _create(blue_star, ["z"])
    assert red.session("x").read().messages[0].text == "I am x"
    assert sorted(red.sessions()) == ["x", "y"]
    assert list(blue.sessions()) == ["x"]
    assert blue.purge() == 1
    assert list(blue_star.sessions()) == ["z"]
    assert sorted(red.sessions()) == ["x", "y"]
    assert red.session("x").read().version == 1


def test_namespace_and_id_boundaries_do_not_blur(open_ledger: OpenLedger) -> None:
    run = uuid.uuid4().hex[:8]
    left, right = open_ledger(namespace=f"{run}a:b"), open_ledger(namespace=f"{run}a")
    left.session("c").append([user("left")])
    right.session("b:c").append([user("right")])
    assert left.session("c").read().messages[0].text == "left"
    assert right.session("b:c").read().messages[0].text == "right"
    assert list(right.sessions()) == ["b:c"]


def test_many_sessions_are_listed_across_pages(store: Store, session_page: int) -> None:
    purged = [f"user-0{i:04d}" for i in range(2 * session_page)]
    ids = purged + [f"user-1{i:04d}" for i in range(session_page // 5 + 3)]
    _create(store, ids)
    assert sorted(store.sessions(prefix="user-")) == ids
    assert store.purge(prefix="user-0") == len(purged)
    assert len(list(store.sessions())) == len(ids) - len(purged)


ASTRAL = "\U0001d11e"  # four bytes of UTF-8: the most a character takes


def _of_bytes(count: int, tail: str = "") -> str:
    """Text of exactly ``count`` bytes of UTF-8, four-byte characters but for its end."""
    return ASTRAL * ((count - len(tail)) // 4) + "a" * ((count - len(tail)) % 4) + tail


def test_the_longest_ids_are_stored_on_every_backend(open_ledger: OpenLedger) -> None:
    """A 512-byte namespace, a 1,024-byte session id and user id, and a 256-character
    message id of four-byte characters: the largest of each the library accepts fit
    every backend's keys together (PostgreSQL's index rows, DynamoDB's 2,048-byte
    partition key and 1,024-byte sort keys)."""
    namespace = _of_bytes(512, uuid.uuid4().hex[:8])  # the server outlives this test
    store = open_ledger(namespace=namespace)
    session_id, user_id = _of_bytes(1024, "s"), _of_bytes(1024, "u")
    session = store.session(session_id, user=user_id)
    ack = session.append([user("the longest", id=ASTRAL * 256)])
    assert session.append([user("the longest", id=ASTRAL * 256)]).deduplicated
    assert session.read(min_version=ack.version).messages[0].text == "the longest"
    assert list(store.sessions(prefix=session_id[:-1])) == [session_id]
    assert store.forget_user(user_id).deleted == (session_id,)
    assert session.info() is None


@pytest.mark.parametrize("count", [1025, 3 * 1024])
def test_an_id_over_1024_bytes_is_refused_before_any_io(store: Store, count: int) -> None:
    """The limit is in bytes of UTF-8, the same on every backend: 1,024 CJK characters
    (3,072 bytes) are refused as 1,025 ASCII ones are, never sent to a backend that
    would fail on them."""
    too_long = "x" * count if count == 1025 else "\u4e2d" * 1024
    with pytest.raises(ValueError, match=f"session id is {count:,} bytes of UTF-8, over 1,024"):
        store.session(too_long)
    with pytest.raises(ValueError, match=f"user id is {count:,} bytes of UTF-8, over 1,024"):
        store.session("s", user=too_long)
    with pytest.raises(ValueError, match="prefix is"):
        list(store.sessions(prefix=too_long))


def test_a_namespace_over_512_bytes_is_a_config_error(open_ledger: OpenLedger) -> None:
    with pytest.raises(ConfigError, match="namespace is 513 bytes of UTF-8, over 512"):
        open_ledger(namespace=_of_bytes(513))


@pytest.mark.parametrize("bad", ["", "nul\x00", "lone\ud800", 42, "x" * 1025])
def test_bad_session_ids_are_refused(store: Store, bad: object) -> None:
    with pytest.raises((TypeError, ValueError), match="session id"):
        store.session(bad)  # type: ignore[arg-type]


def test_bad_prefixes_are_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="prefix"):
        store.purge(prefix="\ud800")
    with pytest.raises(ValueError, match="prefix"):
        list(store.sessions(prefix="a\x00"))
