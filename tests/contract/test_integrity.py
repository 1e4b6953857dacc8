"""The attacks on an encrypted store, on every backend, by someone who can write
the database (a leaked password, a shared role, a restored backup): entries
written into it raw, in the clear or copied from another place. Each read that
covers such an entry raises, naming the session and seq; nothing is returned
silently; a read that does not cover it still works."""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from chatledger import (
    CorruptEntryError,
    EncryptionKeyError,
    Keyring,
    Store,
    _places,
    assistant,
    user,
)
from chatledger._codec import encode
from chatledger.langgraph import LedgerSaver
from chatledger.langgraph._layout import session_id
from tests.backends import BackendCase, raw_entry
from tests.conftest import OpenLedger

KEY = Keyring.new_key()


def ring() -> Keyring:
    return Keyring({"k": KEY}, current="k")


@pytest.fixture
def sealed(open_ledger: OpenLedger) -> Store:
    return open_ledger(encryption=ring())


@pytest.fixture
def one_ledger_id(monkeypatch: pytest.MonkeyPatch) -> str:
    """Every new ledger gets this id: a copied entry then differs from its
    original in one part of its place alone (session, or namespace)."""
    monkeypatch.setattr(_places, "new_ledger_id", lambda: "0123456789abcdef")
    return "0123456789abcdef"


def three(store: Store, session: str, word: str = "m") -> None:
    store.session(session).append([user(f"{word}1"), assistant(f"{word}2"), user(f"{word}3")])


def refused_at(store: Store, session: str, seq: int) -> CorruptEntryError:
    """Every read covering entry ``seq`` raises, naming it; the others still read."""
    handle = store.session(session)
    for covering in ({}, {"last": 3}, {"after": seq - 1, "limit": 1}, {"max_tokens": 10**6}):
        with pytest.raises(CorruptEntryError) as caught:
            handle.read(**covering)
        assert (caught.value.session, caught.value.seq) == (session, seq), covering
    before = handle.read(limit=seq - 1).messages
    after = handle.read(after=seq).messages
    assert [m.seq for m in before + after] == [s for s in (1, 2, 3) if s != seq]
    return caught.value


def test_an_entry_written_in_the_clear_is_refused(
    backend: BackendCase, sealed: Store, open_ledger: OpenLedger,
) -> None:
    three(sealed, "s")
    backend.corrupt(sealed, "s", 2, encode(user("forged: refund approved")))
    error = refused_at(sealed, "s", 2)
    assert isinstance(error, EncryptionKeyError) and "stored in the clear" in str(error)
    # Only a store opened for the migration window reads it.
    window = open_ledger(namespace=sealed.namespace, encryption=ring(), allow_plaintext=True)
    assert window.session("s").read().messages[1].text == "forged: refund approved"


def test_a_sealed_entry_copied_to_another_seq_is_refused(
    backend: BackendCase, sealed: Store,
) -> None:
    three(sealed, "s")
    backend.copy_entry(sealed, "s", 1, sealed, "s", 3)
    error = refused_at(sealed, "s", 3)
    assert isinstance(error, EncryptionKeyError) and "moved here" in str(error)


def test_a_sealed_entry_copied_to_another_session_is_refused(
    backend: BackendCase, sealed: Store, one_ledger_id: str,
) -> None:
    three(sealed, "a", "a")
    three(sealed, "b", "b")
    assert {sealed.session(s).info().ledger for s in "ab"} == {one_ledger_id}  # type: ignore[union-attr]
    backend.copy_entry(sealed, "a", 2, sealed, "b", 2)
    refused_at(sealed, "b", 2)
    assert [m.text for m in sealed.session("a").read()] == ["a1", "a2", "a3"]


def test_a_sealed_entry_copied_into_a_later_ledger_of_the_same_id_is_refused(
    backend: BackendCase, sealed: Store,
) -> None:
    three(sealed, "s", "old")
    old = raw_entry(sealed, "s", 2)
    first = sealed.session("s").info()
    assert sealed.session("s").delete()
    three(sealed, "s", "new")
    second = sealed.session("s").info()
    assert first is not None and second is not None and first.ledger != second.ledger
    backend.corrupt(sealed, "s", 2, old)
    refused_at(sealed, "s", 2)


def test_a_sealed_entry_copied_to_another_namespace_is_refused(
    backend: BackendCase, sealed: Store, open_ledger: OpenLedger, one_ledger_id: str,
) -> None:
    other = open_ledger(namespace=f"{sealed.namespace}-other", encryption=ring())
    three(sealed, "s", "here")
    three(other, "s", "there")
    assert other.session("s").info().ledger == one_ledger_id  # type: ignore[union-attr]
    backend.copy_entry(sealed, "s", 2, other, "s", 2)
    refused_at(other, "s", 2)
    assert [m.text for m in sealed.session("s").read()] == ["here1", "here2", "here3"]


def test_a_sealed_entry_put_back_where_it_was_opens(backend: BackendCase, sealed: Store) -> None:
    """The control: the bytes themselves are fine, only their place is checked."""
    three(sealed, "s")
    backend.copy_entry(sealed, "s", 2, sealed, "s", 2)
    assert [m.text for m in sealed.session("s").read()] == ["m1", "m2", "m3"]


class Count(TypedDict):
    count: int


def test_an_old_checkpoint_replayed_onto_a_later_one_is_refused(
    backend: BackendCase, ledger_url: str, open_ledger: OpenLedger,
) -> None:
    """The checkpointer's entries are sealed for their place like any entry: the
    bytes of the thread's first checkpoint copied over its latest one are
    refused, by the saver and by a read, and the entries before it stay readable.
    (The saver is the sync one on every case: an async case's store reads it.)"""
    namespace = f"lg-{uuid.uuid4().hex[:12]}"
    builder = StateGraph(Count)
    builder.add_node("step", lambda state: {"count": state["count"] + 1})
    builder.add_edge(START, "step")
    builder.add_edge("step", END)
    config: Any = {"configurable": {"thread_id": "t1"}}
    with LedgerSaver.from_url(ledger_url, namespace=namespace, encryption=ring()) as saver:
        graph = builder.compile(checkpointer=saver)
        graph.invoke({"count": 1}, config)
        graph.invoke({"count": 10}, config)
    store = open_ledger(namespace=namespace, encryption=ring())
    thread = session_id("t1", "")
    seqs = [m.seq for m in store.session(thread).read() if m.id.startswith("c/")]
    assert len(seqs) >= 4  # two runs: an input and an output checkpoint each, at least
    backend.copy_entry(store, thread, seqs[0], store, thread, seqs[-1])
    with LedgerSaver.from_url(ledger_url, namespace=namespace, encryption=ring()) as saver:
        with pytest.raises(CorruptEntryError) as caught:
            saver.get_tuple(config)
        assert (caught.value.session, caught.value.seq) == (thread, seqs[-1])
        with pytest.raises(CorruptEntryError):
            builder.compile(checkpointer=saver).get_state(config)
    kept = store.session(thread).read(limit=seqs[-1] - 1).messages
    assert [m.seq for m in kept] == list(range(1, seqs[-1]))
