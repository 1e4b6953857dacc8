"""Key rotation on every backend: ``store.rotate_key()`` re-seals every entry
of a namespace with the current key, in place, online, resumable and idempotent."""

from __future__ import annotations

import asyncio
import base64
import inspect
import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from chatledger import (
    ConfigError,
    EncryptionKeyError,
    Keyring,
    Message,
    RotationReport,
    Store,
    assistant,
    user,
)
from chatledger._async import rotation
from chatledger._sync import rotation as sync_rotation
from chatledger.testing import Recorder, check_history
from tests.backends import BackendCase
from tests.conftest import OpenLedger
from tests.privacy.at_rest import at_rest

OLD, NEW = Keyring.new_key(), Keyring.new_key()
OLD_RING = Keyring({"old": OLD}, current="old")
BOTH = Keyring({"new": NEW, "old": OLD}, current="new")
NEW_ONLY = Keyring({"new": NEW}, current="new")


def conversation(marker: str, count: int) -> list[Message]:
    """Messages of every kind, each holding ``marker``; bytes entries as the saver's."""
    kinds = [lambda i: user(f"card {marker} #{i}", metadata={"m": marker}),
             lambda i: assistant([{"type": "text", "text": f"{marker} {i}"}],
                                 tool_calls=[{"id": f"c{i}", "name": "t", "args": {"q": marker}}]),
             lambda i: Message(role="user", content="", data=f"v{marker}{i}".encode())]
    return [kinds[i % 3](i) for i in range(count)]


def seeded(open_ledger: OpenLedger, marker: str) -> tuple[str, dict[str, list[Message]]]:
    """A namespace with sealed sessions (one trimmed), and one written in the clear."""
    sealed = open_ledger(encryption=OLD_RING)
    written = {f"s{i}": conversation(marker, 7) for i in range(3)}
    for sid, messages in written.items():
        sealed.session(sid).append(messages[:4])
        sealed.session(sid).append(messages[4:])
    sealed.session("s0").trim(keep_last=5)
    written["s0"] = written["s0"][2:]
    plain = open_ledger(namespace=sealed.namespace)
    written["clear"] = conversation(marker, 4)
    plain.session("clear").append(written["clear"])
    return sealed.namespace, written


def states(store: Store, sessions: Any) -> dict[str, Any]:
    """What rotation must not change: each session's version, seqs, ledger and times."""
    return {sid: store.session(sid).info() for sid in sessions}


def test_rotation_reseals_every_entry_in_place_and_the_old_key_can_go(
    ledger_url: str, open_ledger: OpenLedger,
) -> None:
    marker = uuid.uuid4().hex
    namespace, written = seeded(open_ledger, marker)
    store = open_ledger(namespace=namespace, encryption=BOTH)
    before = states(store, written)
    report = store.rotate_key()
    assert report == RotationReport("new", sessions=4, resealed=19, encrypted=4)
    assert report.rewritten == 23
    held = at_rest(ledger_url, namespace)
    assert len(held.entries) == 23
    assert all(entry[:5] == b"\x03\x03new" for entry in held.entries)
    assert marker.encode() not in held.everything and b"\x03\x03old" not in held.everything
    assert states(store, written) == before  # versions, seqs, ledgers, times: as they were
    fresh = open_ledger(namespace=namespace, encryption=NEW_ONLY)
    for sid, messages in written.items():
        history = fresh.session(sid).read()
        assert history.messages == messages, sid
    assert [m.seq for m in fresh.session("s0").read()] == [3, 4, 5, 6, 7]


def test_a_second_run_rewrites_nothing_and_a_dry_run_writes_nothing(
    ledger_url: str, open_ledger: OpenLedger,
) -> None:
    namespace, _ = seeded(open_ledger, "x")
    store = open_ledger(namespace=namespace, encryption=BOTH)
    untouched = at_rest(ledger_url, namespace).entries
    dry = store.rotate_key(dry_run=True)
    assert dry == RotationReport("new", sessions=4, resealed=19, encrypted=4, dry_run=True)
    assert at_rest(ledger_url, namespace).entries == untouched
    assert store.rotate_key().rewritten == 23
    rotated = at_rest(ledger_url, namespace).entries
    again = store.rotate_key()
    assert again == RotationReport("new", sessions=4, current=23)
    assert at_rest(ledger_url, namespace).entries == rotated  # not even re-sealed alike


def test_a_missing_key_stops_the_rotation_naming_its_id(open_ledger: OpenLedger) -> None:
    namespace, _ = seeded(open_ledger, "x")
    with pytest.raises(EncryptionKeyError) as caught:
        open_ledger(namespace=namespace, encryption=NEW_ONLY).rotate_key()
    assert caught.value.key_id == "old" and "'old'" in str(caught.value)
    wrong = Keyring({"new": NEW, "old": NEW}, current="new")  # the wrong key under that id
    with pytest.raises(EncryptionKeyError, match="does not open with key id 'old'"):
        open_ledger(namespace=namespace, encryption=wrong).rotate_key()
    with pytest.raises(ConfigError, match="needs the store's keyring"):
        open_ledger(namespace=namespace).rotate_key()
    reader = open_ledger(namespace=namespace, encryption=NEW_ONLY)
    with pytest.raises(EncryptionKeyError) as unread:
        reader.session("s1").read()
    assert unread.value.key_id == "old"


def test_reseal_replaces_only_entries_that_still_hold_the_bytes_read(
    backend: BackendCase, open_ledger: OpenLedger,
) -> None:
    store = open_ledger(encryption=OLD_RING)
    store.session("s").append([user(f"m{i}") for i in range(1, 5)])
    store.session("s").trim(keep_last=3)
    info = store.session("s").info()
    raw = dict(store._backend.read("s", rotation.ReadQuery()).entries)
    assert info is not None
    forged = OLD_RING.seal(store.namespace, "s", info.ledger, 2, b"\x01{}")
    resealed = store._backend.reseal
    assert resealed("s", [(3, b"not what is stored", forged)]) == 0
    assert resealed("s", [(1, raw[2], forged), (9, raw[2], forged)]) == 0  # trimmed, never
    assert resealed("absent", [(2, raw[2], forged)]) == 0
    again = BOTH.seal(store.namespace, "s", info.ledger, 2, b"\x01{}")
    assert resealed("s", [(2, raw[2], again), (4, raw[4], again)]) == 2
    after = dict(store._backend.read("s", rotation.ReadQuery()).entries)
    assert (after[2], after[3], after[4]) == (again, raw[3], again)
    assert store.session("s").info() == info


PAIRS = 40


def test_appenders_and_readers_during_rotation_lose_nothing_and_never_fail(
    open_ledger: OpenLedger, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two threads append pairs (sealed with the new key) and two read, until a
    rotation of many small pages is done; every read is a prefix of what was written."""
    monkeypatch.setattr(rotation, "PAGE", 3)
    namespace, written = seeded(open_ledger, "x")
    done = threading.Event()
    recorders = [Recorder(worker) for worker in range(4)]
    errors: list[BaseException] = []

    def append(worker: int) -> None:
        session = open_ledger(namespace=namespace, encryption=BOTH).session(f"s{worker}")
        pair = 0
        # At most PAIRS: the rotation pages through a session (3 entries a round trip
        # here) while it grows, and an appender faster than that would keep it going
        # (DynamoDB's async case, every store on one test loop, did: minutes).
        while pair < 3 or (not done.is_set() and pair < PAIRS):
            pair += 1
            recorders[worker].append(session, [user(f"w{worker} q{pair}"),
                                               assistant(f"w{worker} a{pair}")])

    def read(worker: int) -> None:  # in the migration window: "clear" holds plaintext
        store = open_ledger(namespace=namespace, encryption=BOTH, allow_plaintext=True)
        while not done.is_set():
            for sid in written:
                history = recorders[worker].read(store.session(sid))
                start = history.messages[0].seq if history.messages else 0
                expected = written[sid][:len(history.messages)]
                assert history.messages[:len(expected)] == expected, (sid, start)

    def guarded(target: Any, worker: int) -> None:
        try:
            target(worker)
        except BaseException as exc:
            errors.append(exc)
            done.set()

    threads = [threading.Thread(target=guarded, args=(append if w < 2 else read, w))
               for w in range(4)]
    for thread in threads:
        thread.start()
    try:
        report = open_ledger(namespace=namespace, encryption=BOTH).rotate_key()
    finally:
        done.set()
        for thread in threads:
            thread.join()
    assert not errors, errors
    assert (report.rewritten, report.changed) == (23, 0)
    store = open_ledger(namespace=namespace, encryption=NEW_ONLY)
    store.rotate_key()  # what the two appenders wrote is already current: nothing to redo
    finals = {sid: store.session(sid).read() for sid in ("s0", "s1")}
    history = check_history([r for rec in recorders for r in rec.records], finals)
    assert history.ok, str(history)
    for sid in written:
        assert store.session(sid).read().messages[:len(written[sid])] == written[sid]


class Crash(Exception):
    """What a process dying looks like to the code that was running (memory://, async)."""


def test_a_rotation_killed_mid_way_is_finished_by_running_it_again(
    backend: BackendCase, ledger_url: str, open_ledger: OpenLedger,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A real process SIGKILLed between two re-seal calls, where the backend is
    shared by processes; elsewhere the rotation dies by an exception there."""
    namespace, written = seeded(open_ledger, "x")
    # Mid-migration: the "clear" session may not be sealed yet when the run dies.
    store = open_ledger(namespace=namespace, encryption=BOTH, allow_plaintext=True)
    if backend.multiprocess and not backend.is_async:
        _kill_a_rotation(ledger_url, namespace, calls=4)
    else:
        _crash_a_rotation(store, monkeypatch, calls=4)
    heads = [entry[:5] for entry in at_rest(ledger_url, namespace).entries]
    done = heads.count(b"\x03\x03new")  # four pages of up to two entries each
    assert 4 <= done <= 8 and len(heads) == 23
    for sid, messages in written.items():  # both keys: everything reads, as it was
        assert store.session(sid).read().messages == messages
    report = store.rotate_key()
    assert (report.rewritten, report.current, report.sessions) == (23 - done, done, 4)
    assert store.rotate_key().rewritten == 0
    assert all(entry[:5] == b"\x03\x03new" for entry in at_rest(ledger_url, namespace).entries)


def _kill_a_rotation(url: str, namespace: str, calls: int) -> None:
    keys = ",".join(f"{kid}={base64.b64encode(key).decode()}"
                    for kid, key in (("new", NEW), ("old", OLD)))
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.contract._rotate_worker", url, namespace, str(calls)],
        cwd=Path(__file__).parents[2], stdout=subprocess.PIPE, text=True,
        env={**os.environ, "CHATLEDGER_KEYRING": keys})
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "paused\n"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL


def _crash_a_rotation(store: Any, monkeypatch: pytest.MonkeyPatch, calls: int) -> None:
    with monkeypatch.context() as patch:
        for module in (rotation, sync_rotation):
            patch.setattr(module, "PAGE", 2)
        _crash_after(store, patch, calls)


def _crash_after(store: Any, monkeypatch: pytest.MonkeyPatch, calls: int) -> None:
    made: list[str] = []

    def count_or_die(session: str) -> None:
        if len(made) == calls:
            raise Crash
        made.append(session)

    before_each_reseal(store, monkeypatch, count_or_die)
    with pytest.raises(Crash):
        store.rotate_key()


def before_each_reseal(store: Any, monkeypatch: pytest.MonkeyPatch,
                       action: Any) -> None:
    """Run ``action(session)`` (sync) between a rotation's read of a page and its reseal."""
    backend = store._backend._target if hasattr(store._backend, "_target") else store._backend
    reseal = backend.reseal

    async def before_async(session: str, entries: Any) -> int:
        # Off the event loop: a blocking view of another store waits on this loop.
        await asyncio.to_thread(action, session)
        return int(await reseal(session, entries))

    def before(session: str, entries: Any) -> int:
        action(session)
        return int(reseal(session, entries))

    monkeypatch.setattr(backend, "reseal",
                        before_async if inspect.iscoroutinefunction(reseal) else before)


def test_a_session_deleted_and_written_again_mid_rotation_is_never_overwritten(
    open_ledger: OpenLedger, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Between the read of a page and its reseal, the session goes and comes back
    (written by a process that still seals with the old key): nothing of the new
    ledger is replaced by what the rotation read of the old one."""
    old_writer = open_ledger(encryption=OLD_RING)
    old_writer.session("s").append([user("gone 1"), user("gone 2")])
    store = open_ledger(namespace=old_writer.namespace, encryption=BOTH)
    reborn = [user("new 1"), user("new 2")]

    def recreate(session: str) -> None:
        if old_writer.session(session).read().messages[0].text == "gone 1":
            old_writer.session(session).delete()
            old_writer.session(session).append(reborn)

    with monkeypatch.context() as patch:
        before_each_reseal(store, patch, recreate)
        report = store.rotate_key()
    assert (report.resealed, report.changed) == (2, 2)
    assert store.session("s").read().messages == reborn
    assert store.rotate_key() == RotationReport("new", sessions=1, resealed=2)
    assert open_ledger(namespace=store.namespace, encryption=NEW_ONLY).session(
        "s").read().messages == reborn
