"""The backend's ``heads``: every live session under a prefix with its newest entry,
a page of sessions at a time, read as ``read(last=1)`` reads it (what LedgerStore's
search and list_namespaces rest on)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from chatledger import Store, user
from chatledger._backends.contract import RawHistory, ReadQuery
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
    advance_time(0.6)
    assert [session_id for session_id, _ in _heads(store, "")] == ["s"]
    advance_time(0.6)  # 1.2 s after the append: only a touch would have kept it
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
