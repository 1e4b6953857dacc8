"""An encrypted append whose answer is lost: the retry is sealed for a place too,
and stays idempotent, pinned to the ledger it aimed at, never reusing a lost
ledger's id. On memory://, through the sync store and the async one (seen
through tests.blocking), with the backend's answer dropped after it wrote."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest

from chatledger import (
    Ack,
    BackendUnavailable,
    Keyring,
    MemoryLostError,
    RetryPolicy,
    open_store,
    user,
)
from chatledger._async import sealing as async_sealing
from chatledger._backends.contract import Batch
from chatledger._sync import sealing
from tests.blocking import open_blocking_store

RING = Keyring({"k": Keyring.new_key()}, current="k")


Step = tuple[Any, ...]  # a backend call made between the write and the lost answer


@pytest.fixture(params=["sync", "async"])
def store(request: pytest.FixtureRequest) -> Iterator[Any]:
    opener: Any = open_store if request.param == "sync" else open_blocking_store
    with opener(f"memory://{uuid.uuid4().hex}", encryption=RING,
                retry=RetryPolicy(attempts=3, backoff=0.0, max_backoff=0.0)) as opened:
        yield opened


def wrap_append(store: Any, monkeypatch: pytest.MonkeyPatch,
                around: Callable[[Any, str, Batch], Generator[Step, Any, Any]]) -> None:
    """Replace the backend's append by ``around``, a generator of the backend calls
    to make (("append", ...) or ("delete", ...)); its return value is the answer."""
    target = getattr(store, "_target", store)
    backend = target._backend
    calls = {"append": backend.append, "delete": backend.delete}  # the real ones

    if target is store:
        def append(session: str, batch: Batch) -> Ack:
            steps = around(backend, session, batch)
            try:
                step = next(steps)
                while True:
                    step = steps.send(calls[step[0]](*step[1:]))
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
    else:
        async def append(session: str, batch: Batch) -> Ack:  # type: ignore[misc]
            steps = around(backend, session, batch)
            try:
                step = next(steps)
                while True:
                    step = steps.send(await calls[step[0]](*step[1:]))
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]

    monkeypatch.setattr(backend, "append", append)


def answer_lost_once(store: Any, monkeypatch: pytest.MonkeyPatch,
                     meanwhile: Callable[[Ack], list[Step]] = lambda ack: []) -> list[Ack]:
    """The backend's next append is applied, the ``meanwhile`` calls are made, and
    the caller hears BackendUnavailable; the appends after it are answered."""
    applied: list[Ack] = []

    def around(backend: Any, session: str, batch: Batch) -> Generator[Step, Any, Any]:
        ack = yield ("append", session, batch)
        if applied:
            return ack
        applied.append(ack)
        for step in meanwhile(ack):  # noqa: UP028 -- a list's iterator takes no send()
            yield step
        raise BackendUnavailable("the answer was lost")

    wrap_append(store, monkeypatch, around)
    return applied


def test_a_new_sessions_append_whose_answer_was_lost_is_stored_once(
    store: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    applied = answer_lost_once(store, monkeypatch)
    ack = store.session("s").append([user("hello")])
    assert ack.deduplicated and ack.ledger == applied[0].ledger
    assert [m.text for m in store.session("s").read()] == ["hello"]


def test_a_retry_after_the_new_ledger_was_lost_creates_one_of_another_id(
    store: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    applied = answer_lost_once(store, monkeypatch, meanwhile=lambda ack: [("delete", "s")])
    ack = store.session("s").append([user("hello")])
    assert not ack.deduplicated and ack.ledger != applied[0].ledger
    assert [m.text for m in store.session("s").read()] == ["hello"]


def test_a_retry_never_follows_its_session_into_another_ledger(
    store: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    session = store.session("s")
    session.append([user("first")])

    answer_lost_once(store, monkeypatch, meanwhile=lambda ack: [
        ("delete", "s"), ("append", "s", Batch(ids=["other"], blobs=[b"sealed elsewhere"]))])
    with pytest.raises(MemoryLostError):
        session.append([user("second")])


def test_a_session_that_moves_on_under_every_attempt_is_reported_unavailable(
    store: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:
    for module in (sealing, async_sealing):
        monkeypatch.setattr(module, "SEAL_ATTEMPTS", 2)

    def around(backend: Any, session: str, batch: Batch) -> Generator[Step, Any, Any]:
        yield ("append", session, Batch(ids=[uuid.uuid4().hex], blobs=[b"another writer's"]))
        return (yield ("append", session, batch))

    session = store.session("s")
    session.append([user("first")])
    wrap_append(store, monkeypatch, around)
    with pytest.raises(BackendUnavailable, match="moved on under 2 attempts"):
        session.append([user("second")])
