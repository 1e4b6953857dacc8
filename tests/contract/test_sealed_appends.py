"""Appends to an encrypted store, whose entries are sealed for the ledger and seqs
the backend will give them: every way a handle's idea of the session can be
wrong still stores the batch once, readable, or refuses it as the caller asked."""

from __future__ import annotations

import pytest

from chatledger import ConflictError, Keyring, MemoryLostError, Store, assistant, user
from tests.conftest import OpenLedger

RING = Keyring({"k": Keyring.new_key()}, current="k")


@pytest.fixture
def sealed(open_ledger: OpenLedger) -> Store:
    return open_ledger(encryption=RING)


def texts(store: Store, session: str = "s") -> list[str]:
    return [m.text for m in store.session(session).read()]


def test_a_fresh_handle_appends_to_a_session_it_never_saw(sealed: Store) -> None:
    sealed.session("s").append([user("one")])
    ack = sealed.session("s").append([assistant("two")])  # asks where the session is
    assert (ack.first_seq, ack.version) == (2, 2)
    assert texts(sealed) == ["one", "two"]


def test_handles_that_fall_behind_each_other_seal_again_and_lose_nothing(
    sealed: Store,
) -> None:
    a, b = sealed.session("s"), sealed.session("s")
    for turn in range(3):
        a.append([user(f"a{turn}")])
        b.append([assistant(f"b{turn}")])  # b last saw the session before a's append
    assert texts(sealed) == ["a0", "b0", "a1", "b1", "a2", "b2"]


def test_a_handle_follows_its_session_into_a_new_ledger(sealed: Store) -> None:
    stale = sealed.session("s")
    stale.append([user("old")])
    other = sealed.session("s")
    other.delete()
    other.append([user("new 1"), assistant("new 2")])
    ack = stale.append([user("after")])  # aimed at the deleted ledger, at version 1
    assert (ack.first_seq, ack.ledger) == (3, other.info().ledger)  # type: ignore[union-attr]
    assert texts(sealed) == ["new 1", "new 2", "after"]


def test_the_refusals_the_caller_asked_for_store_nothing(sealed: Store) -> None:
    session = sealed.session("s")
    ack = session.append([user("one")])
    with pytest.raises(ConflictError):
        session.append([user("x")], expect_version=0)
    with pytest.raises(ConflictError):
        sealed.session("s").append([user("x")], expect_version=5)  # a handle that saw nothing
    with pytest.raises(ConflictError):
        sealed.session("absent").append([user("x")], expect_version=2)
    with pytest.raises(MemoryLostError):
        session.append([user("x")], ledger="0123456789abcdef")
    with pytest.raises(MemoryLostError):
        sealed.session("absent").append([user("x")], ledger=ack.ledger)
    assert texts(sealed) == ["one"] and sealed.session("absent").info() is None
    two = session.append([user("two")], expect_version=1, ledger=ack.ledger)
    assert (two.first_seq, two.ledger) == (2, ack.ledger)


def test_a_batch_sent_again_is_stored_once(sealed: Store) -> None:
    batch = [user("q"), assistant("a")]
    first = sealed.session("s").append(batch)
    sealed.session("s").append([user("later")])
    again = sealed.session("s").append(batch)  # sealed anew, for another place: by its ids
    assert again.deduplicated and (again.first_seq, again.last_seq) == (1, 2)
    assert (first.first_seq, first.ledger) == (1, again.ledger)
    assert texts(sealed) == ["q", "a", "later"]
