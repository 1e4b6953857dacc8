"""forget_user on every backend: nothing of the user is left in any key or row,
and everything else is byte for byte as it was."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import uuid
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from chatledger import ForgetReport, SessionUserError, Store, assistant, user
from chatledger._backends.redis.keys import escape
from tests.backends import BackendCase
from tests.erasure import _workers
from tests.erasure._raw import records

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.user_index


class People:
    """Alice (to forget), Bob and an untagged session, with random ids and text."""

    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:10]
        self.alice, self.bob = f"alice-{tag}", f"bob-{tag}"
        self.secret = f"alice-said-{uuid.uuid4().hex}"
        self.thread = f"thread-{tag}"
        self.alice_chats = [f"chat-a{i}-{tag}" for i in range(2)]
        # A LangGraph thread's sessions, as the saver names them (its index, a namespace).
        prefix = f"lg:{len(self.thread)}:{self.thread}"
        self.alice_thread = [prefix, f"{prefix}:"]
        self.bob_chat, self.untagged = f"chat-b-{tag}", f"chat-u-{tag}"

    @property
    def alice_sessions(self) -> list[str]:
        return self.alice_chats + self.alice_thread

    def needles(self) -> list[bytes]:
        """What must not be found anywhere once Alice is forgotten: raw and as
        Redis key names escape it."""
        texts = [self.alice, self.secret, *self.alice_sessions]
        return sorted({form.encode() for text in texts for form in (text, escape(text))})

    def write(self, store: Store) -> None:
        for sid in self.alice_sessions:
            handle = store.session(sid, user=self.alice)
            handle.append([user(f"{self.secret} in {sid}")])
            handle.append([assistant("noted"), user(f"more {self.secret}")])
        store.session(self.bob_chat, user=self.bob).append([user("bob's turn")])
        store.session(self.untagged).append([user("nobody's turn")])


def _mentions(record: bytes, needles: list[bytes]) -> bool:
    return any(needle in record for needle in needles)


def _ours(found: list[bytes], store: Store) -> list[bytes]:
    return [record for record in found if escape(store.namespace).encode() in record
            or store.namespace.encode() in record]


def test_nothing_of_the_user_remains_and_the_rest_is_untouched(
        backend: BackendCase, ledger_url: str, store: Store,
        request: pytest.FixtureRequest) -> None:
    people = People()
    people.write(store)
    before = _ours(records(request, ledger_url), store)
    needles = people.needles()
    assert any(_mentions(record, needles) for record in before)  # the search can fail

    report = store.forget_user(people.alice)

    assert isinstance(report, ForgetReport)
    assert sorted(report.deleted) == sorted(people.alice_sessions)
    assert report.threads == (people.thread,)
    assert (report.sessions_deleted, report.threads_deleted) == (4, 1)
    assert report.already_gone == report.still_written == () and report.complete
    after = records(request, ledger_url)
    left = [record for record in after if _mentions(record, needles)]
    assert left == [], left
    assert _ours(after, store) == [r for r in before if not _mentions(r, needles)]
    assert sorted(store.sessions()) == sorted([people.bob_chat, people.untagged])
    assert store.session(people.bob_chat).read().messages[0].text == "bob's turn"
    again = store.forget_user(people.alice)
    assert again == ForgetReport(user=people.alice)


def test_dry_run_deletes_nothing(backend: BackendCase, ledger_url: str, store: Store,
                                 request: pytest.FixtureRequest) -> None:
    people = People()
    people.write(store)
    before = records(request, ledger_url)
    report = store.forget_user(people.alice, dry_run=True)
    assert report.dry_run and sorted(report.deleted) == sorted(people.alice_sessions)
    assert report.threads == (people.thread,)
    assert records(request, ledger_url) == before
    assert store.forget_user(people.bob).deleted == (people.bob_chat,)
    assert store.forget_user("nobody") == ForgetReport(user="nobody")


def test_a_session_keeps_the_user_of_its_first_append(backend: BackendCase,
                                                      store: Store) -> None:
    people = People()
    people.write(store)
    for wrong, sid, owner in ((people.bob, people.alice_chats[0], people.alice),
                              (people.alice, people.untagged, None)):
        with pytest.raises(SessionUserError) as caught:
            store.session(sid, user=wrong).append([user("not stored")])
        assert (caught.value.session, caught.value.user, caught.value.owner) == (sid, wrong, owner)
        assert "not stored" not in [m.text for m in store.session(sid).read()]
    # A handle without a user appends to a tagged session, which stays tagged.
    store.session(people.alice_chats[0]).append([user(f"{people.secret} untagged handle")])
    store.session(people.alice_chats[0], user=people.alice).append([user("same user")])
    assert store.session(people.alice_chats[0]).read().version == 5
    info, untagged = store.session(people.alice_chats[0]).info(), store.session(
        people.untagged).info()
    assert info is not None and untagged is not None
    assert (info.user, untagged.user) == (people.alice, None)
    assert people.alice_chats[0] in store.forget_user(people.alice).deleted


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_session_deleted_and_written_again_by_no_user_or_another_stays(
        backend: BackendCase, store: Store, dry_run: bool) -> None:
    for sid, again in (("reused-untagged", None), ("reused-other", "dave")):
        store.session(sid, user="carol").append([user("carol's")])
        store.session(sid).delete()  # the user index may still name it (Redis)
        store.session(sid, user=again).append([user("not carol's")])
    report = store.forget_user("carol", dry_run=dry_run)
    assert report.deleted == () and report.dry_run is dry_run
    for sid in ("reused-untagged", "reused-other"):
        assert [m.text for m in store.session(sid).read()] == ["not carol's"]


def test_expired_sessions_are_already_gone(backend: BackendCase, open_ledger: Any,
                                           advance_time: Any) -> None:
    store = open_ledger(ttl=1 if not backend.injectable_clock else 60)
    store.session("short", user="carol").append([user("soon gone")])
    advance_time(1.2 if not backend.injectable_clock else 61)
    report = store.forget_user("carol")
    assert report.deleted == () and report.already_gone == ("short",)
    assert store.forget_user("carol") == ForgetReport(user="carol")


def _options(store: Store) -> dict[str, Any]:
    return {"namespace": store.namespace}


class _Cut(Exception):
    pass


def _cut_in_process(store: Any, owner: str, finished: int) -> None:
    """As ``_workers.forget_then_hang``, in this process (memory://, which no other
    process sees, and the async store, whose backends the sync cases kill a real
    process on): the erasure stops with an exception where the process would have
    been killed."""
    real = getattr(store, "_target", store)._backend  # the async store behind a blocking view
    forget, done = real.forget_session, [0]

    def cut_here() -> bool:
        done[0] += 1
        return done[0] > finished

    async def aforget_session(who: str, session: str) -> bool:
        if cut_here():
            await real.delete(session)
            raise _Cut(session)
        return bool(await forget(who, session))

    def sforget_session(who: str, session: str) -> bool:
        if cut_here():
            real.delete(session)
            raise _Cut(session)
        return bool(forget(who, session))

    is_async = real is not store._backend
    real.forget_session = aforget_session if is_async else sforget_session
    try:
        with pytest.raises(_Cut):
            store.forget_user(owner)
    finally:
        del real.forget_session


def _kill_midway(url: str, store: Store, owner: str, finished: int) -> None:
    """A real process forgets ``owner`` and is SIGKILLed between a session and its
    index entry, after ``finished`` sessions."""
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.erasure._workers", url, store.namespace, owner,
         str(finished)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "cut\n"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()


def test_a_rerun_finishes_an_erasure_killed_midway(backend: BackendCase, ledger_url: str,
                                                   store: Store,
                                                   request: pytest.FixtureRequest) -> None:
    people = People()
    people.write(store)
    if backend.multiprocess and not backend.is_async:  # a real process, once per backend
        _kill_midway(ledger_url, store, people.alice, 2)
    else:
        _cut_in_process(store, people.alice, 2)
    left = store._backend.user_sessions(people.alice)
    # Two were forgotten whole; the one cut is gone, and still indexed where the
    # index is apart from the session (Redis), or gone with it (a transaction).
    assert len(left) in (1, 2), left
    assert len(store._backend.user_sessions(people.alice)) == len(left)
    report = store.forget_user(people.alice)
    assert len(report.deleted) == 1 and len(report.deleted + report.already_gone) == len(left)
    assert not [r for r in records(request, ledger_url) if _mentions(r, people.needles())]


WRITERS = 2
TURNS = 30


def test_writers_during_the_erasure_leave_every_session_indexed(
        backend: BackendCase, ledger_url: str, store: Store,
        request: pytest.FixtureRequest) -> None:
    """Writers keep appending to Alice's sessions while she is forgotten: each
    session they recreate is tagged and indexed, so once they stop, one more
    forget_user leaves nothing of her."""
    people = People()
    people.write(store)
    with ExitStack() as stack:
        pool: Executor
        if backend.multiprocess and not backend.is_async:  # processes, once per backend
            context = multiprocessing.get_context("spawn")
            start = stack.enter_context(context.Manager()).Barrier(WRITERS + 1)
            pool = ProcessPoolExecutor(WRITERS, mp_context=context)
        else:
            start, pool = threading.Barrier(WRITERS + 1), ThreadPoolExecutor(WRITERS)
        stack.enter_context(pool)
        futures = [pool.submit(_workers.write_sessions, ledger_url, _options(store),
                               people.alice, people.alice_chats[w::WRITERS], start, TURNS)
                   for w in range(WRITERS)]
        start.wait(60)
        reports = [store.forget_user(people.alice)]
        while not all(future.done() for future in futures):
            reports.append(store.forget_user(people.alice))
        assert [future.result(timeout=120) for future in futures] == [TURNS] * WRITERS
    alive = {sid for sid in store.sessions() if sid in people.alice_sessions}
    assert alive <= set(store._backend.user_sessions(people.alice)), "a session not indexed"
    final = store.forget_user(people.alice)
    assert set(final.deleted) == alive and final.complete
    assert sum(len(r.deleted) for r in reports) >= len(people.alice_sessions)
    assert not [r for r in records(request, ledger_url) if _mentions(r, people.needles())]
    assert store.session(people.bob_chat).read().messages[0].text == "bob's turn"
