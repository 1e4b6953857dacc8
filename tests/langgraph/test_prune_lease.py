"""Pruning (keep_latest) a thread a run holds keeps the run's lease: the thread
stays held, so a second run is refused (multitask_strategy="reject") and the
holder goes on storing its steps. The restatement trimmed the lease entry away,
which freed the thread under the running run."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest

from chatledger.langgraph import (
    AsyncLedgerSaver,
    AsyncThreadRuns,
    LeaseLost,
    LedgerSaver,
    ThreadBusy,
    ThreadRuns,
)
from tests.conftest import FakeClock
from tests.langgraph._graphs import texts
from tests.langgraph._run_workers import counting_graph

CONFIG: Any = {"configurable": {"thread_id": "t"}}


def _said(text: str) -> Any:
    return {"messages": [("user", text)]}


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_a_pruned_thread_stays_held_by_its_run(store: str, tmp_path: Path) -> None:
    url = (f"memory://{uuid.uuid4().hex}" if store == "memory"
           else f"sqlite:///{tmp_path / 'runs.db'}")
    with LedgerSaver.from_url(url) as saver:
        runs = ThreadRuns(counting_graph(saver, str(tmp_path / "log")), lease=60.0)
        runs.invoke(_said("order 1"), CONFIG)
        with runs.hold(CONFIG) as fenced:
            saver.prune(["t"])
            with pytest.raises(ThreadBusy):
                runs.invoke(_said("order 2"), CONFIG)
            answer = texts(runs.graph.invoke(_said("order 3"), fenced))  # not LeaseLost
        assert answer[-1] == "Good news: order 3 has shipped."
        runs.invoke(_said("order 4"), CONFIG)  # released as usual


def test_an_async_pruned_thread_stays_held_by_its_run(tmp_path: Path) -> None:
    async def scenario() -> list[str]:
        async with AsyncLedgerSaver.from_url(f"memory://{uuid.uuid4().hex}") as saver:
            runs = AsyncThreadRuns(counting_graph(saver, str(tmp_path / "log")), lease=60.0)
            await runs.ainvoke(_said("order 1"), CONFIG)
            async with runs.ahold(CONFIG) as fenced:
                await saver.aprune(["t"])
                with pytest.raises(ThreadBusy):
                    await runs.ainvoke(_said("order 2"), CONFIG)
                answer = texts(await runs.graph.ainvoke(_said("order 3"), fenced))
            await runs.ainvoke(_said("order 4"), CONFIG)
            return answer

    assert asyncio.run(scenario())[-1] == "Good news: order 3 has shipped."


def test_a_run_taken_over_before_a_prune_stays_fenced_after_it(tmp_path: Path) -> None:
    """The run that took the thread over has its taking entry trimmed by the prune,
    its lease restated as a renewal: a run with a higher token still holds the thread,
    and the one it took over from may store nothing more."""
    clock = FakeClock()
    with LedgerSaver.from_url(f"memory://{uuid.uuid4().hex}", clock=clock) as saver:
        runs = ThreadRuns(counting_graph(saver, str(tmp_path / "log")), lease=60.0)
        runs.invoke(_said("order 1"), CONFIG)
        with runs.hold(CONFIG) as stale:
            clock.advance(60.0)  # the holder pauses past its lease
            with runs.hold(CONFIG) as fresh:  # another run takes the thread over
                saver.prune(["t"])
                with pytest.raises(LeaseLost, match="another run took the thread over"):
                    runs.graph.invoke(_said("order 2"), stale)
                answer = texts(runs.graph.invoke(_said("order 3"), fresh))
    assert answer[-1] == "Good news: order 3 has shipped."


def test_a_held_thread_without_a_checkpoint_yet_is_not_deleted_by_a_prune(
        tmp_path: Path) -> None:
    with LedgerSaver.from_url(f"memory://{uuid.uuid4().hex}") as saver:
        runs = ThreadRuns(counting_graph(saver, str(tmp_path / "log")), lease=60.0)
        with runs.hold(CONFIG) as fenced:  # taken, its first checkpoint not stored yet
            saver.prune(["t"])
            with pytest.raises(ThreadBusy):
                runs.invoke(_said("order 1"), CONFIG)
            answer = texts(runs.graph.invoke(_said("order 2"), fenced))
    assert answer[-1] == "Good news: order 2 has shipped."


@pytest.mark.parametrize("allow_forks", [False, True], ids=["forks-refused", "forks-allowed"])
def test_a_run_taken_over_stays_fenced_after_a_prune_of_the_finished_takeover(
        tmp_path: Path, allow_forks: bool) -> None:
    """The run that took the thread over has finished (its lease released) before the
    prune: no lease is left to restate, and the latest checkpoint, its run's, is what
    fences the run it took over from. Without it that run stored on top of the thread,
    forks refused or not: its invoke continues the latest checkpoint, no fork."""
    clock = FakeClock()
    with LedgerSaver.from_url(f"memory://{uuid.uuid4().hex}", clock=clock,
                              allow_forks=allow_forks) as saver:
        runs = ThreadRuns(counting_graph(saver, str(tmp_path / "log")), lease=60.0)
        runs.invoke(_said("order 1"), CONFIG)
        with runs.hold(CONFIG) as stale:
            clock.advance(60.0)  # the holder pauses past its lease
            runs.invoke(_said("order 2"), CONFIG)  # another run takes the thread, and ends
            saver.prune(["t"])
            with pytest.raises(LeaseLost, match="another run took the thread over"):
                runs.graph.invoke(_said("order 3"), stale)
        latest = saver.get_tuple(CONFIG)
        assert latest is not None
        assert texts(latest.checkpoint["channel_values"])[-1] == (
            "Good news: order 2 has shipped.")
