"""Checkpoint data is bytes, and a value has no size limit of its own.

A value larger than one message may hold (``max_message_bytes``, 1 MiB by
default) is stored in parts within the put's one append, and comes back
byte for byte on every backend.
"""

from __future__ import annotations

import asyncio
import base64
import operator
import os
import uuid
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph

from chatledger import CorruptEntryError, Message
from chatledger.langgraph import AsyncLedgerSaver, LedgerSaver
from chatledger.langgraph._layout import session_id
from chatledger.langgraph._parts import join, split
from tests.langgraph.conftest import backend_url
from tests.langgraph.test_saver import _config, _put

MB = 1_000_000


def _document(size: int) -> str:
    return base64.b64encode(os.urandom(size * 3 // 4)).decode()[:size]


@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis", "sentinel", "cluster", "postgres"])
def test_a_20_mb_value_and_write_round_trip(kind: str, request: pytest.FixtureRequest,
                                            tmp_path: Path) -> None:
    big, write = _document(20 * MB), _document(3 * MB)
    with LedgerSaver.from_url(backend_url(kind, request, tmp_path)) as saver:
        first = _put(saver, values={"doc": big, "small": 1})
        saver.put_writes(first, [("doc", write)], "task")
        second = _put(saver, first, values={"doc": big, "small": 2},
                      versions={"doc": 1, "small": 2}, new={"small": 2})

        latest = saver.get_tuple(_config())
        older = saver.get_tuple(first)
    assert latest is not None and latest.config == second
    assert latest.checkpoint["channel_values"] == {"doc": big, "small": 2}
    assert older is not None and older.pending_writes == [("task", "doc", write)]


class _Docs(TypedDict):
    docs: list[str]


def test_a_large_list_item_and_a_graph_state_value(url: str) -> None:
    document = _document(2 * MB)

    def retrieve(state: _Docs) -> dict[str, Any]:
        return {"docs": [*state["docs"], document]}

    builder = StateGraph(_Docs)
    builder.add_node("retrieve", retrieve)
    builder.add_edge(START, "retrieve")
    with LedgerSaver.from_url(url) as saver:
        graph = builder.compile(checkpointer=saver)
        config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
        graph.invoke({"docs": ["small"]}, config)
        graph.invoke({"docs": ["small", document]}, config)
        state = graph.get_state(config)
        saver.copy_thread(config["configurable"]["thread_id"], "copy")
        copied = saver.get_tuple({"configurable": {"thread_id": "copy"}})
    assert state.values["docs"] == ["small", document, document]
    assert copied is not None
    assert copied.checkpoint["channel_values"]["docs"] == ["small", document, document]


class _Doc(TypedDict):
    doc: str
    log: Annotated[list[str], operator.add]


_BIG = 1_100_000  # over max_message_bytes: both values in parts, in one put


def _two_large_values() -> Any:
    builder = StateGraph(_Doc)
    builder.add_node("reply", lambda state: {"log": ["ok"]})
    builder.add_edge(START, "reply")
    return builder


def _turns() -> list[dict[str, Any]]:
    return [{"doc": "d" * _BIG, "log": ["x" * _BIG]}, {"doc": "e" * _BIG, "log": ["second"]}]


_READ_BACK = {"doc": "e" * _BIG, "log": ["x" * _BIG, "ok", "second", "ok"]}


def test_a_thread_of_two_large_values_reads_from_a_new_saver(url: str) -> None:
    """The next process reads the thread: a read back for one entry's parts meets
    other entries stored in parts, whose own parts lie further back, and needs none
    of them (it raised "a part ... is missing" though every part was stored)."""
    config: Any = {"configurable": {"thread_id": uuid.uuid4().hex}}
    with LedgerSaver.from_url(url) as writer:
        graph = _two_large_values().compile(checkpointer=writer)
        for turn in _turns():
            graph.invoke(turn, config)
    with LedgerSaver.from_url(url) as reader:
        graph = _two_large_values().compile(checkpointer=reader)
        values = graph.get_state(config).values
        graph.invoke({"log": ["third"]}, config)
        after = graph.get_state(config).values
    assert values == _READ_BACK
    assert after["log"][-2:] == ["third", "ok"] and after["doc"] == "e" * _BIG


def test_the_async_saver_reads_such_a_thread_from_a_new_saver() -> None:
    config: Any = {"configurable": {"thread_id": "t"}}
    url = f"memory://{uuid.uuid4().hex}"

    async def scenario() -> dict[str, Any]:
        async with await AsyncLedgerSaver.from_url(url) as writer:
            graph = _two_large_values().compile(checkpointer=writer)
            for turn in _turns():
                await graph.ainvoke(turn, config)
        async with await AsyncLedgerSaver.from_url(url) as reader:
            graph = _two_large_values().compile(checkpointer=reader)
            return (await graph.aget_state(config)).values

    assert asyncio.run(scenario()) == _READ_BACK


def test_join_restores_only_the_entries_from_since_on() -> None:
    big = Message(role="system", content="big", id="b", metadata={"langgraph": 2},
                  data=bytes(range(256)) * 40)
    stored = [Message(role=m.role, content=m.content, id=m.id, metadata=m.metadata,
                      data=m.data, seq=i + 1) for i, m in enumerate(split([big, big], 4096))]
    assert len(stored) == 6  # two parts of each, then the two entries
    second = len(stored)
    window = stored[2:]  # lacks the first entry's parts, not the second's
    assert join(window)[1] == 1
    whole, lacking = join(window, since=second)
    assert lacking is None and [(m.seq, m.data) for m in whole] == [(second, big.data)]


def test_parts_survive_prune(saver: LedgerSaver) -> None:
    big = _document(3 * MB)
    first = _put(saver, values={"doc": big})
    saver.put_writes(first, [("doc", big)], "task")

    saver.prune(["t"])

    found = saver.get_tuple(_config())
    assert found is not None and found.checkpoint["channel_values"] == {"doc": big}
    assert found.pending_writes == [("task", "doc", big)]


def test_a_lost_part_is_loud(url: str) -> None:
    with LedgerSaver.from_url(url) as saver:
        _put(saver, values={"doc": _document(3 * MB)})
        session = saver.store.session(session_id("t", ""))
        session.trim(keep_last=3)  # cuts the value's first parts away

        with pytest.raises(CorruptEntryError, match="part"):
            saver.get_tuple(_config())


def test_split_puts_parts_first_and_join_restores_the_batch() -> None:
    small = Message(role="system", content="small", id="a", metadata={"langgraph": 2},
                    data=b"s")
    big = Message(role="system", content="big", id="b", metadata={"langgraph": 2},
                  data=bytes(range(256)) * 40)

    batch = split([big, small, big], 4096)

    kinds = [m.metadata.get("kind") for m in batch]
    assert kinds == ["Part"] * (len(batch) - 3) + [None] * 3 and len(batch) > 5
    stored = [Message(role=m.role, content=m.content, id=m.id, metadata=m.metadata,
                      data=m.data, seq=i + 1) for i, m in enumerate(batch)]
    whole, lacking = join(stored)
    assert lacking is None
    assert [m.data for m in whole] == [big.data, small.data, big.data]
    cut, lacking = join(stored[1:])  # the first entry's first part is cut away
    assert lacking == 1
    assert [(m.content, m.data) for m in cut] == [("small", b"s"), ("big", big.data)]
    with pytest.raises(ValueError, match="no room"):
        split([big], 600)


@pytest.mark.parametrize("spec", [[1], [0, 0], [1, 2], "x", [True, "1"]])
def test_a_malformed_parts_pointer_is_corrupt(saver: LedgerSaver, spec: Any) -> None:
    _put(saver, values={"a": 1})
    session = saver.store.session(session_id("t", ""))
    latest = session.read(last=1).messages[0]
    session.append([Message(role="system", content="bad", id="bad",
                            metadata={**latest.metadata, "id": "bad-checkpoint",
                                      "parts": spec}, data=latest.data)])

    with pytest.raises(CorruptEntryError):
        saver.get_tuple(_config())


def test_an_entry_of_another_format_is_refused_not_guessed_at(saver: LedgerSaver) -> None:
    """A checkpoint entry this chatledger did not write (format 1 never shipped)."""
    _put(saver, values={"a": 1})
    session = saver.store.session(session_id("t", ""))
    latest = session.read(last=1).messages[0]
    session.append([Message(role="system", content="c", id="c-other", metadata={
        **latest.metadata, "langgraph": 1, "id": "other"}, data=latest.data)])
    with pytest.raises(CorruptEntryError, match="format 1, this chatledger reads format 2"):
        saver.get_tuple(_config())


@pytest.mark.parametrize("field", ["carried", "chains", "early"])
def test_copying_a_checkpoint_that_points_at_garbage_is_loud(saver: LedgerSaver,
                                                            field: str) -> None:
    _put(saver, values={"a": 1})
    session = saver.store.session(session_id("t", ""))
    latest = session.read(last=1).messages[0]
    bad = {"carried": {"a": "x"}, "chains": {"a": ["x", 1, "d", 1, 0]}, "early": ["x"]}[field]
    session.append([Message(role="system", content="bad", id="bad", data=latest.data,
                            metadata={**latest.metadata, "id": "bad-cp", field: bad})])

    with pytest.raises(CorruptEntryError):
        saver.copy_thread("t", "copy")


def test_a_copied_thread_heavier_than_one_append_goes_in_several(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from chatledger import _batches
    from chatledger._sync.store import Session

    monkeypatch.setattr(_batches, "APPEND_DATA_BYTES", 2 * MB)  # 64 MiB in production
    appended: list[tuple[str, int]] = []
    original = Session.append

    def counted(self: Session, messages: Any, **options: Any) -> Any:
        appended.append((self.id, sum(len(m.data or b"") for m in messages)))
        return original(self, messages, **options)

    with LedgerSaver.from_url(f"sqlite:///{tmp_path}/heavy.db") as saver:
        docs = [_document(MB * 3 // 4) for _ in range(6)]  # 4.5 MB of entries in all
        config = None
        for i, doc in enumerate(docs):
            config = _put(saver, config, values={"doc": doc}, versions={"doc": i + 1})
        monkeypatch.setattr(Session, "append", counted)
        saver.copy_thread("t", "copy")
        monkeypatch.undo()
        copies = [c.checkpoint["channel_values"]["doc"] for c in
                  saver.list({"configurable": {"thread_id": "copy"}})]
    batches = [size for session, size in appended if session == session_id("copy", "")]
    assert len(batches) >= 3 and max(batches) <= 2 * MB  # whole, in several appends
    assert copies == docs[::-1]
