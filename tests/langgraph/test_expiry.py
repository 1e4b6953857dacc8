"""A thread expires as a whole, ttl after its last sweep; a put sweeps it when due.

An injected clock moves time (the store option ``clock=``), on memory and
SQLite, through the sync saver and the async one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from chatledger import system
from chatledger.langgraph import CheckpointConflict, LedgerSaver
from chatledger.langgraph._expiry import SWEEP_AFTER
from chatledger.langgraph._layout import index_session_id, session_id
from tests.conftest import FakeClock
from tests.langgraph._blocking import BlockingSaver
from tests.langgraph.conftest import backend_url

TTL = 100.0
CHILD = "child:1"


@pytest.fixture(params=[("memory", "sync"), ("sqlite", "sync"), ("sqlite", "async")],
                ids=lambda p: "-".join(p))
def saver(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Any:
    backend, kind = request.param
    opener: Any = LedgerSaver if kind == "sync" else BlockingSaver
    with opener.from_url(backend_url(backend, request, tmp_path), ttl=TTL,
                         clock=clock) as opened:
        yield opened


def _config(ns: str = "", checkpoint_id: str | None = None) -> Any:
    configurable = {"thread_id": "t", "checkpoint_ns": ns}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _put(saver: Any, parent: Any = None, *, ns: str = "", value: Any = None,
         starts: bool = False) -> Any:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"v": value}
    checkpoint["channel_versions"] = {"v": 1}
    parent_id = parent["configurable"]["checkpoint_id"] if parent else None
    md: Any = {"source": "input", "step": -1} if starts else {"source": "loop", "step": 0}
    return saver.put(_config(ns, parent_id), checkpoint, md, {"v": 1})


def _value(saver: Any, ns: str = "") -> Any:
    found = saver.get_tuple(_config(ns))
    return None if found is None else found.checkpoint["channel_values"]["v"]


def test_a_namespace_not_written_lives_as_long_as_its_thread(saver: Any,
                                                             clock: FakeClock) -> None:
    root = _put(saver, value="root 0", starts=True)
    _put(saver, ns=CHILD, value="child")
    for step in range(1, 11):  # 300 seconds of puts to the root namespace only
        clock.advance(30)
        root = _put(saver, root, value=f"root {step}")

    assert _value(saver, CHILD) == "child"
    assert _value(saver) == "root 10"
    assert {t.config["configurable"]["checkpoint_ns"]
            for t in saver.list({"configurable": {"thread_id": "t"}})} == {"", CHILD}


def test_a_quiet_thread_expires_whole_at_one_moment(saver: Any, clock: FakeClock) -> None:
    root = _put(saver, value="root 0", starts=True)  # the first put sweeps: at 0
    _put(saver, ns=CHILD, value="child")
    clock.advance(TTL * SWEEP_AFTER - 5)
    _put(saver, root, value="root 1")  # too soon to sweep: the thread lives until 100

    clock.advance(TTL - clock.now % TTL - 1)  # 99 seconds after the sweep
    assert (_value(saver), _value(saver, CHILD)) == ("root 1", "child")
    clock.advance(1)
    # The store has removed the child namespace; the root one, written at 20, is still
    # stored for 20 seconds, and already reads as expired: the thread went at once.
    assert saver.store.session(session_id("t", CHILD)).info() is None
    assert saver.store.session(session_id("t", "")).info() is not None
    assert (_value(saver), _value(saver, CHILD)) == (None, None)
    assert list(saver.list({"configurable": {"thread_id": "t"}})) == []


def test_an_expired_thread_starts_over_and_a_stale_run_is_told(saver: Any,
                                                               clock: FakeClock) -> None:
    root = _put(saver, value="old 0", starts=True)
    clock.advance(20)
    root = _put(saver, root, value="old 1")
    clock.advance(TTL)  # the sweep at 0 is 120 seconds old: expired

    with pytest.raises(CheckpointConflict) as caught:
        _put(saver, root, value="a run that began before the expiry")
    assert caught.value.latest is None
    fresh = _put(saver, value="new 0", starts=True)

    assert _value(saver) == "new 0"
    # The old checkpoints are still stored (until their own expiry), never read again.
    assert [t.config for t in saver.list(_config())] == [fresh]
    assert saver.get_tuple(root) is None


def test_a_keep_alive_after_a_namespace_expired_revives_nothing(saver: Any,
                                                                clock: FakeClock) -> None:
    _put(saver, value="root", starts=True)  # sweep at 0
    clock.advance(20)
    _put(saver, ns=CHILD, value="child")  # stored until 120, expired at 100
    clock.advance(90)

    _put(saver, value="root again", starts=True)  # at 110: starts over, sweeps the thread

    stored = saver.store.session(session_id("t", CHILD)).read(last=1).messages
    assert stored[-1].metadata["kind"] == "KeepAlive"  # the sweep reached the child...
    assert _value(saver, CHILD) is None  # ...too late to keep it
    assert _value(saver) == "root again"


def test_without_a_ttl_nothing_expires_and_nothing_is_swept(
    request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock
) -> None:
    with LedgerSaver.from_url(backend_url("sqlite", request, tmp_path), clock=clock) as saver:
        root = _put(saver, value="root", starts=True)
        _put(saver, ns=CHILD, value="child")
        clock.advance(10 ** 8)
        _put(saver, root, value="root 1")
        kinds = [m.metadata["kind"] for m in
                 saver.store.session(session_id("t", CHILD)).read(last=10).messages]
        assert (_value(saver), _value(saver, CHILD)) == ("root 1", "child")
    assert "KeepAlive" not in kinds


def test_an_index_whose_newest_entry_is_not_ours_is_swept_again(saver: Any) -> None:
    _put(saver, value="root", starts=True)
    index = saver.store.session(index_session_id("t"))
    index.append([system("a note someone else wrote")])

    _put(saver, ns=CHILD, value="child")  # cannot tell the last sweep: sweeps

    assert index.read(last=1).messages[-1].metadata["kind"] == "KeepAlive"
    assert (_value(saver), _value(saver, CHILD)) == ("root", "child")
