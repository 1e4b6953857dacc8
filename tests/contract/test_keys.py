"""Promise 9: namespaces isolate, and ids and prefixes are data, never patterns."""

from __future__ import annotations

import uuid

import pytest

from chatledger import Store, user
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


@pytest.mark.parametrize("bad", ["", "nul\x00", "lone\ud800", 42, "x" * 1025])
def test_bad_session_ids_are_refused(store: Store, bad: object) -> None:
    with pytest.raises((TypeError, ValueError), match="session id"):
        store.session(bad)  # type: ignore[arg-type]


def test_bad_prefixes_are_refused(store: Store) -> None:
    with pytest.raises(ValueError, match="prefix"):
        store.purge(prefix="\ud800")
    with pytest.raises(ValueError, match="prefix"):
        list(store.sessions(prefix="a\x00"))
