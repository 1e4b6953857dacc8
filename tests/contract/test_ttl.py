"""Promise 10: a session expires as a whole after ``ttl`` without writes."""

from __future__ import annotations

from collections.abc import Callable

from chatledger import Store, user
from tests.conftest import OpenLedger

Advance = Callable[[float], None]


def test_a_session_expires_whole_after_ttl_without_writes(
    open_ledger: OpenLedger, advance_time: Advance
) -> None:
    store = open_ledger(ttl=1.0)
    session = store.session("s")
    session.append([user("a"), user("b")])
    info = session.info()
    assert info is not None and info.expires_at is not None
    assert 0 < (info.expires_at - info.updated_at).total_seconds() <= 1.0
    advance_time(1.2)
    assert session.info() is None
    assert session.read().version == 0
    assert list(store.sessions()) == []
    assert store.purge() == 0


def test_writes_slide_the_expiry(open_ledger: OpenLedger, advance_time: Advance) -> None:
    store = open_ledger(ttl=2.0)
    session = store.session("s")
    # Where the server keeps time (Redis), these are real seconds: each wait leaves 1.5 s
    # of the TTL for the next append to arrive on a loaded machine (a TTL of 1 s and
    # waits of 0.3 s, 0.7 s to spare, lost that race on two cores under a full run).
    for turn in range(5):
        session.append([user(f"turn {turn}")])
        advance_time(0.5)  # 2.5 s in all: only sliding keeps the session alive
    assert session.read().version == 5
    advance_time(1.7)
    assert session.info() is None


def test_reads_do_not_slide_the_expiry_by_default(
    open_ledger: OpenLedger, advance_time: Advance
) -> None:
    store = open_ledger(ttl=1.0)
    session = store.session("s")
    session.append([user("a")])
    advance_time(0.3)
    assert session.read().version == 1
    advance_time(0.9)
    assert session.read().version == 0


def test_touch_on_read_makes_reads_slide_the_expiry(
    open_ledger: OpenLedger, advance_time: Advance
) -> None:
    store = open_ledger(ttl=2.0, touch_on_read=True)
    session = store.session("s")
    session.append([user("a")])
    for _ in range(5):
        advance_time(0.5)  # 2.5 s in all; 1.5 s of the TTL left for each read to arrive
        assert session.read(last=1).version == 1
    advance_time(2.2)
    assert session.read().version == 0


def test_an_expired_session_starts_afresh_with_nothing_left_over(
    open_ledger: OpenLedger, advance_time: Advance
) -> None:
    store = open_ledger(ttl=1.0)
    session = store.session("s")
    old = user("old")
    session.append([old, user("older")])
    advance_time(1.2)
    ack = session.append([old])  # its id expired with the session: stored anew
    assert (ack.first_seq, ack.deduplicated) == (1, False)
    assert [m.text for m in session.read()] == ["old"]


def test_without_ttl_sessions_do_not_expire(store: Store, advance_time: Advance) -> None:
    store.session("s").append([user("a")])
    info = store.session("s").info()
    assert info is not None and info.expires_at is None
    advance_time(1.2)
    assert store.session("s").read().version == 1


def test_expired_sessions_vanish_from_listings_untouched(
    open_ledger: OpenLedger, advance_time: Advance
) -> None:
    # Where the server keeps time (Redis), this is real time: the young session must
    # outlive the listing and the purge on a loaded machine (0.9 s to spare).
    store = open_ledger(ttl=2.0)
    store.session("old-1").append([user("a")])
    store.session("old-2").append([user("b")])
    advance_time(1.1)
    store.session("young").append([user("c")])
    advance_time(1.1)  # the two old ones expired; nothing has looked at them since
    assert list(store.sessions()) == ["young"]
    assert store.purge() == 1
