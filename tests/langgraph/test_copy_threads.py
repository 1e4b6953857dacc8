"""copy_threads from LangGraph's own savers on real databases into a LedgerSaver.

Each source (InMemorySaver, SqliteSaver, PostgresSaver on a private server,
DynamoDBSaver on moto's DynamoDB) is written by real graphs; after the copy
the history of every thread is the same on both sides, the threads stopped
at an interrupt resume on chatledger, and a race on a copied thread is
refused instead of forking it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from chatledger.langgraph import (
    CheckpointConflict,
    LedgerSaver,
    compare_threads,
    copy_threads,
)
from chatledger.testing import check_checkpointer
from chatledger.testing._chat_turns import chat_graph
from tests.langgraph._copy_sources import (
    SOURCES,
    THREADS,
    config,
    review_graph,
    source_saver,
    write_threads,
)
from tests.langgraph._graphs import agent_graph, approval_graph, texts
from tests.langgraph.conftest import backend_url

LONG_TURNS = 25  # the full 1,000 turns: benchmarks/copy_threads.py
# The long thread on DynamoDBSaver: moto walks the whole table on each read, and
# this thread is most of it. Its reads page by the megabyte, which 25 turns do not
# reach either: 6 take its layout through the same reads in a fraction of the time.
SHORT_TURNS = 6


@pytest.fixture(scope="module", params=SOURCES)
def source(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One source per kind for the module: the tests only read it."""
    with source_saver(request.param, request, tmp_path_factory.mktemp("source")) as saver:
        write_threads(saver, long_turns=_long_turns(saver))
        yield saver


@pytest.fixture
def target_url(tmp_path: Path, request: pytest.FixtureRequest) -> str:
    return backend_url("sqlite", request, tmp_path)


def _thread_ids(source: BaseCheckpointSaver[Any]) -> list[str] | None:
    """DynamoDBSaver cannot list all its threads: it is told them."""
    return list(THREADS) if type(source).__name__ == "DynamoDBSaver" else None


def _long_turns(source: BaseCheckpointSaver[Any]) -> int:
    return SHORT_TURNS if type(source).__name__ == "DynamoDBSaver" else LONG_TURNS


def test_every_thread_s_history_is_the_same_on_chatledger(source: Any, target_url: str) -> None:
    with LedgerSaver.from_url(target_url) as target:
        report = copy_threads(source, target, thread_ids=_thread_ids(source))
        assert report.ok, report.summary()
        assert sorted(t.thread_id for t in report.threads) == sorted(THREADS)
        assert {t.thread_id: t.namespaces for t in report.threads}["review"] == 2
        for thread, graph in THREADS.items():
            theirs = list(graph(source).get_state_history(config(thread)))
            assert list(graph(target).get_state_history(config(thread))) == theirs, thread
        assert compare_threads(source, target, thread_ids=list(THREADS)) == []
        long = chat_graph(target).get_state(config("long"))
        assert len(long.values["items"]) == 2 * _long_turns(source)


def test_threads_stopped_at_an_interrupt_resume_on_chatledger(source: Any,
                                                              target_url: str) -> None:
    with LedgerSaver.from_url(target_url) as target:
        copy_threads(source, target, thread_ids=_thread_ids(source))
        approval = approval_graph(target)
        assert approval.get_state(config("approval")).interrupts[0].value == {
            "question": "Refund 40 EUR for order 123?"}
        done = approval.invoke(Command(resume="yes"), config("approval"))
        assert texts(done)[-1] == "Refund sent."
        review = review_graph(target)
        assert review.get_state(config("review")).next == ("review",)
        done = review.invoke(Command(resume="ok"), config("review"))
        assert texts(done)[-1] == "reviewer said ok"
        # The source still waits: the copy moved nothing out of it.
        assert approval_graph(source).get_state(config("approval")).next == ("approve",)


def test_copying_again_stores_nothing(source: Any, target_url: str) -> None:
    with LedgerSaver.from_url(target_url) as target:
        first = copy_threads(source, target, thread_ids=_thread_ids(source))
        again = copy_threads(source, target, thread_ids=_thread_ids(source))
        assert first.checkpoints > 2 * _long_turns(source) and first.writes > 0
        assert (again.checkpoints, again.writes, again.present) == (0, 0, first.checkpoints)
        assert again.ok and "copied 0 checkpoints and 0 pending writes" in again.summary()


def test_a_copied_thread_refuses_a_stale_writer_instead_of_forking(target_url: str) -> None:
    source = InMemorySaver()
    write_threads(source, long_turns=2)
    with LedgerSaver.from_url(target_url) as target:
        copy_threads(source, target)
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    class Racing(LedgerSaver):
        def get_tuple(self, config: Any) -> Any:
            found = super().get_tuple(config)
            if config["configurable"].get("checkpoint_id") is None:
                barrier.wait(30)  # both runs read the same latest checkpoint
            return found

    def run(text: str) -> None:
        with Racing.from_url(target_url) as saver:
            try:
                agent_graph(saver).invoke({"messages": [HumanMessage(text)]}, config("forked"))
                outcomes.append("stored")
            except CheckpointConflict:
                outcomes.append("refused")

    runs = [threading.Thread(target=run, args=(text,)) for text in ("hi", "hello")]
    for each in runs:
        each.start()
    for each in runs:
        each.join(60)
    assert sorted(outcomes) == ["refused", "stored"]
    with LedgerSaver.from_url(target_url) as target:
        history = list(target.list(config("forked")))
        after_copy = [t for t in history if t.checkpoint["id"] > max(
            s.checkpoint["id"] for s in source.list(config("forked")))]
        parents = [t.parent_config["configurable"]["checkpoint_id"] for t in after_copy
                   if t.parent_config]
        assert after_copy and len(parents) == len(set(parents))  # one line: no fork


def test_the_target_still_passes_the_checkpointer_check_after_a_copy(target_url: str) -> None:
    source = InMemorySaver()
    write_threads(source, long_turns=2)
    with LedgerSaver.from_url(target_url) as target:
        assert copy_threads(source, target).ok
    report = check_checkpointer("chatledger.langgraph:LedgerSaver.from_url", target_url,
                                mode="threads", processes=4, threads=2, turns=2,
                                thread_rounds=2, timeout=60)
    assert report.ok and report.refused, report.summary()
