"""Writes that reach the saver before their checkpoint are returned with it.

LangGraph hands ``put`` and ``put_writes`` to its executor as independent
futures, so a task's writes on checkpoint C can be stored before C, and even
before C's parent when that put lags. Each test here fails on a saver that
only returns writes stored after their checkpoint.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.types import INTERRUPT
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt

from chatledger.langgraph import AsyncLedgerSaver, LedgerSaver
from chatledger.langgraph._early import LIMIT, EarlyWrites
from tests.langgraph.test_saver import _config, _put


def _checkpoint(parent: Any = None, **values: Any) -> tuple[Any, Any]:
    """A checkpoint made (not yet put), and the config its writes and put use."""
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = dict(values)
    checkpoint["channel_versions"] = dict.fromkeys(values, 2)
    parent_id = parent["configurable"]["checkpoint_id"] if parent else None
    return checkpoint, _config(checkpoint_id=parent_id)


def _on(checkpoint: Any) -> Any:
    return _config(checkpoint_id=checkpoint["id"])


def test_writes_stored_before_their_checkpoint_come_back_with_it(saver: LedgerSaver) -> None:
    parent = _put(saver, values={"a": 1})
    checkpoint, config = _checkpoint(parent, a=2)
    saver.put_writes(_on(checkpoint), [("a", 3), ("b", "x")], "task-1", "~path")

    saver.put(config, checkpoint, {"source": "loop", "step": 1}, {"a": 2})
    saver.put_writes(_on(checkpoint), [(INTERRUPT, "ask")], "task-2")

    found = saver.get_tuple(_on(checkpoint))
    assert found is not None
    assert sorted(found.pending_writes) == [
        ("task-1", "a", 3), ("task-1", "b", "x"), ("task-2", INTERRUPT, "ask")]
    listed = next(iter(saver.list(_config(), limit=1)))
    assert sorted(listed.pending_writes) == sorted(found.pending_writes)


def test_writes_stored_before_a_parent_that_lagged_come_back(saver: LedgerSaver) -> None:
    grandparent = _put(saver, values={"a": 1})
    parent, parent_config = _checkpoint(grandparent, a=2)
    child, child_config = _checkpoint(_on(parent), a=3)
    saver.put_writes(_on(child), [("a", 4)], "task-c")  # the parent's put is still running

    saver.put(parent_config, parent, {"source": "loop", "step": 1}, {"a": 2})
    saver.put(child_config, child, {"source": "loop", "step": 2}, {"a": 3})

    found = saver.get_tuple(_on(child))
    assert found is not None and found.pending_writes == [("task-c", "a", 4)]
    parent_found = saver.get_tuple(_on(parent))
    assert parent_found is not None and parent_found.pending_writes == []


def test_early_writes_far_behind_their_checkpoint_are_read(saver: LedgerSaver) -> None:
    """More entries than a walk's first page lie between the write and its checkpoint."""
    parent = _put(saver, values={"a": 1})
    checkpoint, config = _checkpoint(parent, a=2)
    saver.put_writes(_on(checkpoint), [("a", "early")], "task-early")
    for i in range(40):
        saver.put_writes(parent, [("a", i)], f"task-{i}")

    saver.put(config, checkpoint, {"source": "loop", "step": 1}, {"a": 2})

    found = saver.get_tuple(_config())
    assert found is not None and found.pending_writes == [("task-early", "a", "early")]


def test_early_writes_survive_copy_and_prune(saver: LedgerSaver) -> None:
    parent = _put(saver, values={"a": 1})
    checkpoint, config = _checkpoint(parent, a=2)
    saver.put_writes(_on(checkpoint), [("a", "early")], "task-1")
    for i in range(20):
        saver.put_writes(parent, [("a", i)], f"task-{i}")
    saver.put(config, checkpoint, {"source": "loop", "step": 1}, {"a": 2})

    saver.copy_thread("t", "copy")
    saver.prune(["t"])

    for thread in ("t", "copy"):
        found = saver.get_tuple(_config(thread))
        assert found is not None, thread
        assert found.pending_writes == [("task-1", "a", "early")], thread
        assert found.checkpoint["channel_values"] == {"a": 2}


def test_a_write_stored_twice_before_its_checkpoint_is_returned_once(
        saver: LedgerSaver) -> None:
    parent = _put(saver, values={"a": 1})
    checkpoint, config = _checkpoint(parent, a=2)
    saver.put_writes(_on(checkpoint), [("a", 3)], "task-1")
    saver.put_writes(_on(checkpoint), [("a", 3)], "task-1")  # a retry: stored once

    saver.put(config, checkpoint, {"source": "loop", "step": 1}, {"a": 2})

    found = saver.get_tuple(_on(checkpoint))
    assert found is not None and found.pending_writes == [("task-1", "a", 3)]


def test_a_put_waits_for_a_write_on_its_checkpoint_still_in_flight() -> None:
    early = EarlyWrites()
    token = early.begin("s", "c")
    assert token is not None
    waiter = threading.Thread(target=early.settled, args=("s", "c", 60.0))
    waiter.start()

    early.end("s", "c", token, 7)
    waiter.join(timeout=60)

    assert not waiter.is_alive()
    assert early.seqs("s", "c") == [7]
    early.put("s", "c")
    assert early.seqs("s", "c") == []
    assert early.begin("s", "c") is None  # put: later writes land after it


def test_a_write_that_failed_names_no_seq_and_a_silent_one_stops_no_put() -> None:
    early = EarlyWrites()
    failed, silent = early.begin("s", "c"), early.begin("s", "c")
    assert failed is not None and silent is not None
    early.end("s", "c", failed, None)

    early.settled("s", "c", 0.01)  # the silent write never answers: the put goes on
    asyncio.run(early.asettled("s", "c", 0.01))

    assert early.seqs("s", "c") == []
    assert early.in_flight("s", "c") == [silent]
    early.end("s", "c", silent, 9)  # it answers after the put gave up waiting
    assert silent.result() == 9 and early.seqs("s", "c") == [9]


def test_the_registry_is_bounded() -> None:
    early = EarlyWrites()
    for i in range(LIMIT + 10):
        token = early.begin("s", f"c{i}")
        assert token is not None
        early.end("s", f"c{i}", token, i + 1)
        early.put("s", f"p{i}")

    assert early.seqs("s", "c0") == []  # forgotten first
    assert early.seqs("s", f"c{LIMIT + 9}") == [LIMIT + 10]
    assert early.begin("s", "p0") is not None  # forgotten too: treated as not put


def test_async_writes_in_flight_are_awaited_without_blocking_the_loop() -> None:
    async def scenario() -> list[int]:
        early = EarlyWrites()
        token = early.begin("s", "c")
        assert token is not None
        waiting = asyncio.create_task(early.asettled("s", "c", 60.0))
        await asyncio.sleep(0)  # the waiter starts; the loop stays free to end the write
        early.end("s", "c", token, 3)
        await waiting
        return early.seqs("s", "c")

    assert asyncio.run(scenario()) == [3]


# -- graph level: what a human-in-the-loop UI and a resumed run see -----------


def _add(left: list[str], right: list[str]) -> list[str]:
    return left + right


class _Answers(TypedDict):
    answers: Annotated[list[str], _add]


def _parallel_interrupts() -> Any:
    def asker(name: str) -> Any:
        def node(state: _Answers) -> dict[str, list[str]]:
            return {"answers": [f"{name}={interrupt(f'ask {name}')}"]}
        return node

    builder = StateGraph(_Answers)
    for name in ("a", "b", "c"):
        builder.add_node(name, asker(name))
        builder.add_edge(START, name)
    return builder


@pytest.mark.parametrize("durability", ["async", "exit", "sync"])
def test_parallel_interrupts_answered_one_per_invoke_finish(url: str, durability: str) -> None:
    """LangGraph's test_finished_task_output_applies_once: on a saver that loses
    early writes, every resume asks the same question again, forever."""
    with LedgerSaver.from_url(url) as saver:
        graph = _parallel_interrupts().compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
        graph.invoke({"answers": []}, config, durability=durability)
        asked = [i.value for i in graph.get_state(config).interrupts]
        assert sorted(asked) == ["ask a", "ask b", "ask c"]
        for _ in range(3):
            pending = graph.get_state(config).interrupts
            if not pending:
                break
            graph.invoke(Command(resume={pending[0].id: "yes"}), config,
                         durability=durability)
        state = graph.get_state(config)
    assert not state.interrupts
    assert sorted(state.values["answers"]) == ["a=yes", "b=yes", "c=yes"]


def test_parallel_interrupts_on_the_async_saver(url: str) -> None:
    async def scenario() -> Any:
        async with AsyncLedgerSaver.from_url(url) as saver:
            graph = _parallel_interrupts().compile(checkpointer=saver)
            config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
            await graph.ainvoke({"answers": []}, config)
            for _ in range(3):
                pending = (await graph.aget_state(config)).interrupts
                if not pending:
                    break
                await graph.ainvoke(Command(resume={pending[0].id: "ok"}), config)
            return await graph.aget_state(config)

    state = asyncio.run(scenario())
    assert not state.interrupts
    assert sorted(state.values["answers"]) == ["a=ok", "b=ok", "c=ok"]


class _WriteDuringForkLookup(LedgerSaver):
    """Stores a write on the checkpoint being put while the put looks up its parent."""

    write_on: Any = None

    def _checkpoint(self, ledger: Any, checkpoint_id: str | None) -> Any:
        if self.write_on is not None:
            on, self.write_on = self.write_on, None
            self.put_writes(on, [("a", "meanwhile")], "task-meanwhile")
        return super()._checkpoint(ledger, checkpoint_id)


def test_a_write_stored_while_a_fork_reads_its_parent_comes_back(url: str) -> None:
    """A fork reads the ledger twice (the latest, then its parent): a write that
    lands between the two must fail the put's append, not slip in unnamed."""
    with _WriteDuringForkLookup.from_url(url) as saver:
        first = _put(saver, values={"a": 1})
        _put(saver, first, values={"a": 2}, versions={"a": 2})
        fork, _ = _checkpoint(first, a=3)
        saver.write_on = _on(fork)
        config = _config(checkpoint_id=first["configurable"]["checkpoint_id"],
                         metadata={"checkpoint_id": first["configurable"]["checkpoint_id"]})

        saver.put(config, fork, {"source": "loop", "step": 1}, {"a": 3})

        found = saver.get_tuple(_on(fork))
    assert found is not None
    assert found.pending_writes == [("task-meanwhile", "a", "meanwhile")]


def test_a_write_that_fails_names_no_seq(url: str) -> None:
    """A put_writes the store refuses leaves nothing for the checkpoint's put to name."""
    with LedgerSaver.from_url(url, max_message_bytes=2048) as saver:
        parent = _put(saver, values={"a": 1})
        checkpoint, config = _checkpoint(parent, a=2)
        with pytest.raises(ValueError, match="no room"):
            saver.put_writes(_on(checkpoint), [("a", "x" * 4096)], "task-" + "t" * 1500)
        session = saver._ledger("t", "").session.id
        assert saver._early.seqs(session, checkpoint["id"]) == []
        assert saver._early.in_flight(session, checkpoint["id"]) == []

        saver.put(config, checkpoint, {"source": "loop", "step": 1}, {"a": 2})
        found = saver.get_tuple(_on(checkpoint))
    assert found is not None and found.pending_writes == []


def test_an_early_write_that_is_gone_is_loud(url: str) -> None:
    from chatledger import CorruptEntryError

    with LedgerSaver.from_url(url) as saver:
        parent = _put(saver, values={"a": 1})
        checkpoint, config = _checkpoint(parent, a=2)
        saver.put_writes(_on(checkpoint), [("a", "early")], "task-early")
        for i in range(40):
            saver.put_writes(parent, [("a", i)], f"task-{i}")
        saver.put(config, checkpoint, {"source": "loop", "step": 1}, {"a": 2})
        saver._ledger("t", "").session.trim(keep_last=20)  # cuts the early write away

        with pytest.raises(CorruptEntryError, match="stored before"):
            saver.get_tuple(_on(checkpoint))


def test_a_write_ended_after_its_checkpoint_was_forgotten_is_harmless() -> None:
    early = EarlyWrites()
    token = early.begin("s", "c")
    assert token is not None
    early.put("s", "c")  # put meanwhile (or evicted): the pending list is gone

    early.end("s", "c", token, 5)

    assert token.result() == 5 and early.seqs("s", "c") == []
