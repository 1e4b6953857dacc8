"""The recorder: what a worker's appends and reads did, in real stores, with
errors recorded and raised again unchanged."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from chatledger import BackendUnavailable, ConflictError, RetryPolicy, open_store, user
from chatledger.testing import Recorder, Window, check_history, free_port


def test_appends_and_reads_are_recorded_with_what_the_store_said() -> None:
    recorder = Recorder(7)
    with open_store("memory://") as store:
        session = store.session("s")
        ack = recorder.append(session, [user("q", id="m1"), user(["block", {"k": 1}], id="m2")])
        history = recorder.read(session, last=1)
    append, read = recorder.records
    assert (append.session, append.worker, append.index, append.outcome) == ("s", 7, 0, "ok")
    assert append.ack == ack and append.ids == ("m1", "m2")
    assert append.texts == ("q", '["block", {"k": 1}]')
    assert append.start <= append.end <= read.start <= read.end
    assert read.window == Window(last=1) and read.index == 1
    assert [(m.seq, m.id) for m in read.messages] == [(2, "m2")]
    assert (read.version, read.first_seq, read.ledger) == (2, 1, history.ledger)
    assert str(read.window) == "last=1" and str(Window()) == "all"


def test_a_refused_append_is_recorded_failed_and_raised() -> None:
    recorder = Recorder()
    with open_store("memory://") as store, pytest.raises(ConflictError):
        recorder.append(store.session("s"), [user("q")], expect_version=3)
    (append,) = recorder.records
    assert append.outcome == "failed" and append.ack is None
    assert append.error is not None and append.error.startswith("ConflictError: ")
    assert "failed" in str(append)


def test_an_unanswered_append_or_read_is_recorded_indeterminate_and_raised() -> None:
    recorder = Recorder()
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    with open_store(url, retry=RetryPolicy.none(), timeout=0.5) as store:
        session = store.session("s")
        with pytest.raises(BackendUnavailable):
            recorder.append(session, [user("q")])
        with pytest.raises(BackendUnavailable):
            recorder.read(session)
    assert [r.outcome for r in recorder.records] == ["indeterminate", "indeterminate"]
    assert "indeterminate" in str(recorder.records[1])


def test_any_store_is_recorded_through_calls_of_yours() -> None:
    recorder = Recorder()
    stored: list[object] = []
    messages = [user("q", id="1"), user("a", id="2")]
    assert recorder.append_via("s", messages, lambda: stored.extend(messages)) is None
    assert recorder.read_via("s", lambda: stored) == messages
    append, read = recorder.records
    assert append.outcome == "ok" and append.ack is None
    assert [(m.seq, m.id, m.text) for m in read.messages] == [(1, "1", "q"), (2, "2", "a")]
    assert read.version == 2


def test_errors_of_any_store_are_indeterminate_and_raised() -> None:
    recorder = Recorder()

    def broken() -> list[object]:
        raise ConnectionError("reset by peer")

    with pytest.raises(ConnectionError):
        recorder.append_via("s", [user("q")], broken)
    with pytest.raises(ConnectionError):
        recorder.read_via("s", broken)
    assert [(r.outcome, r.error) for r in recorder.records] == [
        ("indeterminate", "ConnectionError: reset by peer")] * 2


def test_entries_with_data_are_recorded_and_checked_by_id_and_text(tmp_path: Path) -> None:
    recorder = Recorder()
    with open_store(f"sqlite:///{tmp_path}/r.db", max_message_bytes=4_000_000) as store:
        session = store.session("s")
        recorder.append(session, [user("file", id="m1", data=bytes(3_000_000)), user("q")])
        recorder.append(session, [user("again", data=b"\x00")])
        recorder.read(session)
        final = session.read()
    report = check_history(recorder.records, {"s": final})
    assert report.ok, report
    assert recorder.records[0].texts == ("file", "q")
    # Records travel between processes: they keep ids and texts, never the data.
    assert len(pickle.dumps(recorder.records)) < 10_000
