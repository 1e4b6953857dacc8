"""An encrypted append whose answer is lost: the retry is sealed for a place too,
and stays idempotent, pinned to the ledger it aimed at, never reusing a lost
ledger's id. On memory://, with the backend's answer dropped after it wrote."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from chatledger import (
    Ack,
    BackendUnavailable,
    Keyring,
    MemoryLostError,
    RetryPolicy,
    Store,
    open_store,
    user,
)
from chatledger._backends.contract import Batch
from chatledger._sync import sealing

RING = Keyring({"k": Keyring.new_key()}, current="k")


@pytest.fixture
def store() -> Iterator[Store]:
    with open_store(f"memory://{uuid.uuid4().hex}", encryption=RING,
                    retry=RetryPolicy(attempts=3, backoff=0.0, max_backoff=0.0)) as opened:
        yield opened


def answer_lost_once(store: Store, monkeypatch: pytest.MonkeyPatch,
                     meanwhile: Callable[[Ack], None] = lambda ack: None) -> list[Ack]:
    """The backend's next append is applied, ``meanwhile`` runs, and the caller hears
    BackendUnavailable; the appends after it are answered. Returns what was applied."""
    real = store._backend.append
    applied: list[Ack] = []

    def append(session: str, batch: Batch) -> Ack:
        ack = real(session, batch)
        if applied:
            return ack
        applied.append(ack)
        meanwhile(ack)
        raise BackendUnavailable("the answer was lost")

    monkeypatch.setattr(store._backend, "append", append)
    return applied


def test_a_new_sessions_append_whose_answer_was_lost_is_stored_once(
    store: Store, monkeypatch: pytest.MonkeyPatch,
) -> None:
    applied = answer_lost_once(store, monkeypatch)
    ack = store.session("s").append([user("hello")])
    assert ack.deduplicated and ack.ledger == applied[0].ledger
    assert [m.text for m in store.session("s").read()] == ["hello"]


def test_a_retry_after_the_new_ledger_was_lost_creates_one_of_another_id(
    store: Store, monkeypatch: pytest.MonkeyPatch,
) -> None:
    applied = answer_lost_once(store, monkeypatch,
                               meanwhile=lambda ack: store._backend.delete("s"))
    ack = store.session("s").append([user("hello")])
    assert not ack.deduplicated and ack.ledger != applied[0].ledger
    assert [m.text for m in store.session("s").read()] == ["hello"]


def test_a_retry_never_follows_its_session_into_another_ledger(
    store: Store, monkeypatch: pytest.MonkeyPatch,
) -> None:
    session = store.session("s")
    session.append([user("first")])

    def written_again(ack: Ack) -> None:
        store._backend.delete("s")
        store._backend.append("s", Batch(ids=["other"], blobs=[b"sealed elsewhere"]))

    answer_lost_once(store, monkeypatch, meanwhile=written_again)
    with pytest.raises(MemoryLostError):
        session.append([user("second")])


def test_a_session_that_moves_on_under_every_attempt_is_reported_unavailable(
    store: Store, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sealing, "SEAL_ATTEMPTS", 2)
    real = store._backend.append

    def append(session: str, batch: Batch) -> Any:
        real(session, Batch(ids=[uuid.uuid4().hex], blobs=[b"another writer's"]))
        return real(session, batch)

    session = store.session("s")
    session.append([user("first")])
    monkeypatch.setattr(store._backend, "append", append)
    with pytest.raises(BackendUnavailable, match="moved on under 2 attempts"):
        session.append([user("second")])
