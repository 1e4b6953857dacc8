"""``get_tuple`` after this saver's own steps reads from the head it knows on.

The newest page whole (16 entries, each decoded) is read only when the saver
knows no head, under a lease, on a trimmed session, or when more than
``SINCE_PAGE`` entries were stored since the head it knows (one read more);
whatever another writer stored meanwhile is still read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from chatledger import _events as events
from chatledger.langgraph import LedgerSaver
from chatledger.langgraph._sync.ledger import FIRST_PAGE, SINCE_PAGE
from tests.langgraph._blocking import BlockingSaver
from tests.langgraph._runs import run

THREAD = {"configurable": {"thread_id": "t-1"}}


@pytest.fixture(params=["sync", "async"])
def opener(request: pytest.FixtureRequest) -> Any:
    """LedgerSaver, or AsyncLedgerSaver behind the sync method names."""
    return LedgerSaver if request.param == "sync" else BlockingSaver


@contextmanager
def _entries_read() -> Iterator[list[int]]:
    """The number of messages each read returns, while in the block."""
    counts: list[int] = []

    def count(operation: events.Operation) -> None:
        if operation.name == "read" and operation.result is not None:
            counts.append(len(operation.result.messages))  # type: ignore[attr-defined]

    with events.listening(count):
        yield counts


def _turns(saver: Any, *texts: str) -> None:
    for text in texts:
        run(saver, "invoke", {"messages": [("user", text)]}, THREAD)


def _same(ours: Any, fresh: Any) -> None:
    assert ours is not None and fresh is not None
    assert ours.config == fresh.config
    assert ours.checkpoint == fresh.checkpoint
    assert ours.pending_writes == fresh.pending_writes


def test_after_its_own_turn_a_saver_reads_the_head_alone(url: str, opener: Any) -> None:
    with opener.from_url(url) as saver, opener.from_url(url) as fresh:
        _turns(saver, "my name is Ada", "order 7")
        with _entries_read() as read:
            ours = saver.get_tuple(THREAD)
        _same(ours, fresh.get_tuple(THREAD))

    assert read and read[0] < FIRST_PAGE // 2


def test_a_step_another_saver_stored_meanwhile_is_read(url: str, opener: Any) -> None:
    with opener.from_url(url) as saver, opener.from_url(url) as other:
        _turns(saver, "my name is Ada")
        known = saver.get_tuple(THREAD)
        assert known is not None
        other.put(known.config, {**known.checkpoint, "id": "1f0-other"}, {"source": "update"}, {})

        ours = saver.get_tuple(THREAD)

        assert ours is not None and ours.config["configurable"]["checkpoint_id"] == "1f0-other"
        _same(ours, other.get_tuple(THREAD))


def test_more_than_a_page_stored_meanwhile_is_read_newest_first(url: str, opener: Any) -> None:
    with opener.from_url(url) as saver, opener.from_url(url) as other:
        _turns(saver, "my name is Ada")
        _turns(other, "order 8", "order 9", "order 10", "order 11", "order 12",
               "my name is Bob")  # more than SINCE_PAGE entries

        with _entries_read() as read:
            ours = saver.get_tuple(THREAD)

        _same(ours, other.get_tuple(THREAD))
        assert read[:2] == [SINCE_PAGE, FIRST_PAGE]  # from the head on: too many; the newest
        messages = ours.checkpoint["channel_values"]["messages"]  # type: ignore[union-attr]
        assert str(messages[-1].content) == "Noted: my name is Bob"


def test_a_first_put_reads_again_when_its_own_write_lands_during_its_read(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """LangGraph stores the input task's writes as the thread's first put reads the
    empty ledger: a write of this saver that ends during the put's read makes it read
    again, where it appended at the version read and failed (a ConflictError in
    every first turn's telemetry, on a healthy service with one writer)."""
    from langgraph.checkpoint.base import empty_checkpoint

    from chatledger.langgraph._sync import ledger as ledger_module

    refused: list[str] = []

    def count(operation: events.Operation) -> None:
        if operation.name == "append" and type(operation.error).__name__ == "ConflictError":
            refused.append(operation.target)

    with LedgerSaver.from_url(f"sqlite:///{tmp_path}/t.db") as saver:
        checkpoint = {**empty_checkpoint(), "id": "1ef-input"}
        config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        written = {**config, "configurable": {**config["configurable"],
                                              "checkpoint_id": "1ef-input"}}
        find = ledger_module.CheckpointLedger.find
        pending = [True]

        def find_then_write(self: Any, *args: Any, **kwargs: Any) -> Any:
            found = find(self, *args, **kwargs)
            if pending:  # the task's write lands while the put reads
                pending.clear()
                saver.put_writes(written, [("messages", "hi")], "task-1")
            return found

        monkeypatch.setattr(ledger_module.CheckpointLedger, "find", find_then_write)
        with events.listening(count):
            saver.put(config, checkpoint, {"source": "input", "step": -1}, {})
        stored = saver.get_tuple(written)
    assert refused == []
    assert stored is not None and stored.pending_writes == [("task-1", "messages", "hi")]
