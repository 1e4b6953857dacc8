"""Ledger identity: a session lost and written again is a new ledger, always told apart."""

from __future__ import annotations

import pytest

from chatledger import Ack, InvalidMessage, MemoryLostError, user
from tests.conftest import OpenLedger


def test_a_recreated_session_past_the_known_version_is_detected(open_ledger: OpenLedger) -> None:
    mine, other = open_ledger(), open_ledger()
    ack = mine.session("s").append([user("a"), user("b")])
    other.session("s").delete()  # behind our back, then regrown past our version
    other.session("s").append([user(f"x{i}") for i in range(5)])
    assert mine.session("s").read(min_version=ack.version).version == 5  # version alone: fooled
    with pytest.raises(MemoryLostError) as caught:
        mine.session("s").read(min_version=ack.version, ledger=ack.ledger)
    lost = caught.value
    assert (lost.session, lost.ledger, lost.found, lost.expected) == ("s", ack.ledger, 5, 2)
    assert lost.found_ledger not in (None, ack.ledger)
    assert f"ledger {ack.ledger!r} is gone" in str(lost)


def test_every_result_names_the_same_ledger_until_it_is_gone(open_ledger: OpenLedger) -> None:
    session = open_ledger().session("s")
    assert session.read().ledger is None  # no session, no ledger
    batch = [user("a")]
    first = session.append(batch)
    assert session.append([user("b")]).ledger == first.ledger
    assert session.append(batch, ledger=first.ledger) == Ack(1, 1, 1, deduplicated=True,
                                                             ledger=first.ledger)
    info = session.info()
    assert info is not None and info.ledger == first.ledger
    assert session.read(last=1, ledger=first.ledger).ledger == first.ledger
    session.trim(keep_last=0)  # trimming keeps the ledger
    assert session.read(ledger=first.ledger).version == 2
    session.delete()
    with pytest.raises(MemoryLostError, match="no longer exists") as caught:
        session.read(ledger=first.ledger)
    assert (caught.value.found, caught.value.found_ledger) == (0, None)
    assert session.append([user("c")]).ledger != first.ledger


def test_an_append_aimed_at_a_gone_ledger_stores_nothing(open_ledger: OpenLedger) -> None:
    store = open_ledger()
    old = store.session("s").append([user("a")])
    store.session("s").delete()
    with pytest.raises(MemoryLostError):  # absent
        store.session("s").append([user("b")], ledger=old.ledger)
    assert store.session("s").info() is None
    new = store.session("s").append([user("c")])
    with pytest.raises(MemoryLostError) as caught:  # another ledger
        store.session("s").append([user("d")], expect_version=1, ledger=old.ledger)
    assert caught.value.found_ledger == new.ledger
    assert [m.text for m in store.session("s").read()] == ["c"]
    assert store.session("s").append([user("e")], ledger=new.ledger).version == 2


@pytest.mark.parametrize("bad", ["", "a\x00", 7])
def test_a_bad_ledger_argument_is_refused_before_any_io(open_ledger: OpenLedger,
                                                        bad: object) -> None:
    session = open_ledger().session("s")
    with pytest.raises((TypeError, ValueError), match="ledger"):
        session.read(ledger=bad)  # type: ignore[arg-type]
    with pytest.raises((TypeError, ValueError), match="ledger"):
        session.append([user("a")], ledger=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidMessage):  # the messages are checked too, first or not
        session.append([], ledger="x")
    assert session.info() is None


def test_a_store_pinned_retry_accepts_its_own_batch_on_a_new_ledger(
        open_ledger: OpenLedger) -> None:
    """The backend rule behind the store's retry pinning: a strict pin (the caller
    named the ledger) is checked first; a retry pin only when the batch is new."""
    from dataclasses import replace

    from chatledger._core import make_batch

    store = open_ledger()
    old = store.session("s").append([user("a")])
    store.session("s").delete()
    batch = make_batch([user("b")], None, None, 1 << 20)
    new = store._backend.append("s", batch)  # the first attempt: not pinned, a new ledger
    retry = replace(batch, ledger=old.ledger, strict=False)
    assert store._backend.append("s", retry) == Ack(1, 1, 1, deduplicated=True, ledger=new.ledger)
    with pytest.raises(MemoryLostError):
        store._backend.append("s", replace(retry, strict=True))
    fresh = make_batch([user("c")], None, old.ledger, 1 << 20)
    with pytest.raises(MemoryLostError):  # a new batch aimed at the gone ledger: refused
        store._backend.append("s", replace(fresh, strict=False))
    assert store.session("s").read().version == 1
