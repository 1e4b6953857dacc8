"""The backend's ``heads``: every live session under a prefix with its newest entry,
a page of sessions at a time, read as ``read(last=1)`` reads it (what LedgerStore's
search and list_namespaces rest on)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from chatledger import Store, user
from chatledger._backends._sync.base import Backend
from chatledger._backends.contract import RawHistory, ReadQuery, first_of_groups, next_group
from chatledger._sync.heads import first_entries
from tests.backends import BackendCase
from tests.conftest import OpenLedger

Advance = Callable[[float], None]
NEWEST = ReadQuery(last=1)


def _heads(store: Store, prefix: str) -> list[tuple[str, RawHistory]]:
    """Every page of ``heads`` under ``prefix``, following the cursors."""
    found: list[tuple[str, RawHistory]] = []
    cursor = None
    while True:
        page: Any = store._backend.heads(prefix, cursor)
        found += page.heads
        if page.cursor is None:
            return found
        cursor = page.cursor


def test_heads_are_each_live_session_s_newest_entry_across_pages(
    store: Store, session_page: int
) -> None:
    ids = [f"h-{i:04d}" for i in range(session_page + 3)]
    for number, session_id in enumerate(ids):
        session = store.session(session_id)
        session.append([user(f"first of {session_id}")])
        if number % 3 == 0:  # some have a longer history, some of it trimmed
            session.append([user(f"second of {session_id}")])
            session.trim(keep_last=1)
    store.session(ids[1]).delete()
    store.session("h").append([user("not under the prefix h-")])
    store.session("i-0000").append([user("elsewhere")])
    live = [i for i in ids if i != ids[1]]

    heads = _heads(store, "h-")

    assert sorted(session_id for session_id, _ in heads) == live  # each once, no other
    assert dict(heads) == {i: store._backend.read(i, NEWEST) for i in live}
    assert dict(heads)[ids[0]].version == 2
    assert len(_heads(store, "")) == len(live) + 2


def test_a_session_trimmed_to_nothing_is_listed_with_no_entry(store: Store) -> None:
    session = store.session("emptied")
    session.append([user("a"), user("b")])
    session.trim(keep_last=0)
    [(session_id, raw)] = _heads(store, "")
    assert (session_id, raw.entries, raw.version, raw.first_seq) == ("emptied", [], 2, 3)
    assert raw.ledger == session.info().ledger  # type: ignore[union-attr]


def test_a_large_newest_entry_comes_back_whole(store: Store) -> None:
    """Over what one DynamoDB item holds: there, the entry is read in its parts."""
    data = bytes(range(256)) * 1600  # 400 KB
    store.session("large").append([user("small")])
    store.session("large").append([user("large", data=data)])
    [(_, raw)] = _heads(store, "")
    assert raw == store._backend.read("large", NEWEST)
    assert store.session("large").read(last=1).messages[0].data == data


def test_heads_skip_expired_sessions_and_never_slide_their_expiry(
    open_ledger: OpenLedger, advance_time: Advance
) -> None:
    store = open_ledger(ttl=1.0, touch_on_read=True)
    store.session("s").append([user("a")])
    advance_time(0.3)  # real seconds on Redis: 0.7 s of the TTL to spare on a slow machine
    assert [session_id for session_id, _ in _heads(store, "")] == ["s"]
    advance_time(0.9)  # 1.2 s after the append: only a touch would have kept it
    assert _heads(store, "") == []
    assert store.session("s").info() is None


def test_an_empty_prefix_has_no_heads_on_an_empty_namespace(store: Store) -> None:
    assert _heads(store, "") == []
    assert _heads(store, "nothing-") == []


def test_a_session_deleted_between_the_listing_and_its_read_is_left_out(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where heads lists a page and then reads it (Redis, DynamoDB), a session deleted
    in between is no head; elsewhere one statement or transaction sees both alike."""
    for session_id in ("a", "b"):
        store.session(session_id).append([user(session_id)])
    backend = getattr(store._backend, "_target", store._backend)  # the async one, unwrapped
    listed = backend.list_sessions
    if inspect.iscoroutinefunction(listed):
        async def listing(prefix: str, cursor: str | None) -> Any:
            page = await listed(prefix, cursor)
            await backend.delete("a")
            return page
    else:
        def listing(prefix: str, cursor: str | None) -> Any:  # type: ignore[misc]
            page = listed(prefix, cursor)
            backend.delete("a")
            return page
    monkeypatch.setattr(backend, "list_sessions", listing)
    heads = [session_id for session_id, _ in _heads(store, "")]
    assert heads == [s for s in ("a", "b") if store.session(s).info() is not None]


def _group_heads(store: Store, prefix: str) -> list[tuple[str, RawHistory]]:
    """Every page of ``group_heads`` under ``prefix`` (groups end at ``=``)."""
    found: list[tuple[str, RawHistory]] = []
    cursor = None
    while True:
        page: Any = store._backend.group_heads(prefix, "=", cursor)
        found += page.heads
        if page.cursor is None:
            return found
        cursor = page.cursor


@pytest.mark.parametrize(("gone", "left"), [
    ("g/a/=1", ["g/a/=2", "g/b/=1"]),  # its group's next session stands for it
    ("g/b/=1", ["g/a/=1"]),  # the last of its group: the group is gone
])
def test_a_group_whose_first_session_is_deleted_after_the_listing_is_listed_by_the_next(
    store: Store, monkeypatch: pytest.MonkeyPatch, gone: str, left: list[str]
) -> None:
    """Where group_heads lists ids and then reads them (Redis's SCAN, DynamoDB's index),
    a group's first session deleted in between leaves its next session to stand for
    it; elsewhere one statement or transaction lists and reads alike."""
    for session_id in ("g/a/=1", "g/a/=2", "g/b/=1"):
        store.session(session_id).append([user(session_id)])
    backend = getattr(store._backend, "_target", store._backend)  # the async one, unwrapped
    name = "_index" if hasattr(backend, "_index") else "list_sessions"  # DynamoDB seeks
    listed = getattr(backend, name)
    deleted: list[bool] = []

    def listed_gone(found: Any) -> bool:  # a SessionPage, or DynamoDB's (id, expiry) pairs
        ids = found.ids if hasattr(found, "ids") else [sid for sid, _ in found]
        return not deleted and gone in ids

    async def listing(*args: Any, **kwargs: Any) -> Any:
        found = await listed(*args, **kwargs)
        if listed_gone(found):
            deleted.append(await backend.delete(gone))
        return found

    def listing_sync(*args: Any, **kwargs: Any) -> Any:
        found = listed(*args, **kwargs)
        if listed_gone(found):
            deleted.append(backend.delete(gone))
        return found

    monkeypatch.setattr(backend, name, listing if inspect.iscoroutinefunction(listed)
                        else listing_sync)
    heads = [session_id for session_id, _ in _group_heads(store, "g/")]
    live = left if deleted else ["g/a/=1", "g/b/=1"]  # else: listed and read in one statement
    assert {_group(s, "g/") for s in heads} == {_group(s, "g/") for s in live}
    assert all(store.session(s).info() is not None for s in heads)  # Cluster: a group
    assert min(heads) == live[0]  # may come again, from another primary's page


def _group(session_id: str, prefix: str) -> str:
    at = session_id.find("=", len(prefix))
    return session_id if at < 0 else session_id[:at + 1]


def test_group_heads_are_the_first_live_session_of_each_group_across_pages(
    store: Store, session_page: int, backend: BackendCase,
) -> None:
    many = [f"g/n{i:04d}/=k" for i in range(session_page + 2)]  # more groups than a page
    dense = [f"g/a/={key}" for key in ("a", "b", "c", "é")]  # one group, several sessions
    ids = [*many, *dense, "g/a/b/=k", "g/a/b/=l", "g/a.b/=k", "g/é/=k", "g/x", "g/x/=1"]
    for session_id in ids:
        store.session(session_id).append([user(f"in {session_id}")])
        store.session(session_id).append([user(f"newest of {session_id}")])
    store.session("g/a/=a").delete()  # the first of its group is gone: the next is first
    store.session("h/a/=k").append([user("outside the prefix")])
    live = [i for i in ids if i != "g/a/=a"]
    firsts = {group: min(i for i in live if _group(i, "g/") == group)
              for group in {_group(i, "g/") for i in live}}

    heads = _group_heads(store, "g/")

    assert {_group(session_id, "g/") for session_id, _ in heads} == set(firsts)
    assert all(raw == store._backend.read(session_id, NEWEST) for session_id, raw in heads)
    if backend.name.startswith(("redis", "sentinel", "cluster")):  # SCAN's pages: no order
        assert all(session_id in live for session_id, _ in heads)
    else:  # an ordered index: each group once, by its first session, in id order
        assert [session_id for session_id, _ in heads] == sorted(firsts.values())
        assert [s for s, _ in _group_heads(store, "")] == sorted({*firsts.values(), "h/a/=k"})


def test_group_heads_skip_expired_sessions(open_ledger: OpenLedger, advance_time: Advance) -> None:
    store = open_ledger(ttl=1.0)
    store.session("p/a/=1").append([user("expires")])
    advance_time(0.9)
    store.session("p/a/=2").append([user("outlives it")])
    advance_time(0.3)  # real seconds on Redis: 0.7 s of the TTL to spare on a slow machine
    assert [session_id for session_id, _ in _group_heads(store, "p/")] == ["p/a/=2"]


def test_the_default_group_heads_keeps_the_first_of_each_group_a_page_of_heads_holds(
    store: Store,
) -> None:
    """What a backend without an ordered index inherits, on one that has one."""
    for session_id in ("q/b/=2", "q/a/=1", "q/b/=1", "q/c"):
        store.session(session_id).append([user(session_id)])
    if inspect.iscoroutinefunction(getattr(store._backend, "_target", store._backend).heads):
        pytest.skip("the async backend runs on its own loop: its sync twin checks the default")
    pages, cursor = [], None
    while not pages or cursor is not None:  # Cluster: a page per primary
        page = Backend.group_heads(store._backend, "q/", "=", cursor)
        pages.append([_group(session_id, "q/") for session_id, _ in page.heads])
        cursor = page.cursor
    assert {group for groups in pages for group in groups} == {"q/a/=", "q/b/=", "q/c"}
    assert all(len(set(groups)) == len(groups) for groups in pages)  # a group once a page
    if len(pages) == 1:  # one page holds them all: the first of each group
        assert sorted(s for s, _ in page.heads) == ["q/a/=1", "q/b/=1", "q/c"]


def test_next_group_and_first_of_groups() -> None:
    assert next_group("p/a/=k", "p/", "=") == "p/a/>"
    assert next_group("p/x", "p/", "=") == "p/x\x01"  # no separator: a group of its own
    assert next_group("=a=b", "", "=") == ">"
    assert first_of_groups(["p/b=2", "p/b=1", "p/a", "p/a=9"], "p/", "=") == [
        "p/a", "p/a=9", "p/b=1"]


def test_a_separator_is_one_ascii_character(store: Store) -> None:
    for separator in ("", "==", "é"):
        with pytest.raises(ValueError, match="one ASCII character"):
            next(first_entries(store, "p/", separator))
