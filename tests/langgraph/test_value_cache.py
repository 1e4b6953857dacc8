"""Decoded value entries are kept between calls, and never served from a ledger that is gone."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from chatledger import _events as events
from chatledger.langgraph import LedgerSaver
from chatledger.langgraph._cache import ValueCache
from chatledger.langgraph._entries import CheckpointEntry, ItemsEntry, ValueEntry
from chatledger.langgraph._lists import Items, msgpack_array, plan
from tests.langgraph.test_lists import _grow
from tests.langgraph.test_saver import _config, _put


@contextmanager
def _rows_read() -> Iterator[list[int]]:
    """Per read the saver makes, the messages it returned."""
    rows: list[int] = []

    def count(operation: events.Operation) -> None:
        if operation.name == "read" and operation.result is not None:
            rows.append(len(operation.result.messages))  # type: ignore[attr-defined]

    with events.listening(count):
        yield rows


def _messages(found: Any) -> list[Any]:
    assert found is not None
    return list(found.checkpoint["channel_values"]["messages"])


def test_the_latest_state_after_a_put_costs_one_read_of_the_newest_entries(url: str) -> None:
    with LedgerSaver.from_url(url) as saver, LedgerSaver.from_url(url) as fresh:
        _, values = _grow(saver, 40)
        with _rows_read() as warm:
            again = saver.get_tuple(_config())
        with _rows_read() as cold:
            first = fresh.get_tuple(_config())
        with _rows_read() as repeat:
            second = fresh.get_tuple(_config())
    assert _messages(again) == _messages(first) == _messages(second) == values[-1]
    assert len(warm) == 1 and len(repeat) == 1  # the newest page: values were known
    assert len(cold) == 2  # a saver that knew nothing read the list's snapshot and deltas


def test_steps_of_another_writer_are_read_and_the_rest_comes_from_the_cache(url: str) -> None:
    with LedgerSaver.from_url(url) as reader, LedgerSaver.from_url(url) as writer:
        configs, _ = _grow(writer, 30)
        assert reader.get_tuple(_config()) is not None  # the reader now knows that state
        messages = _messages(writer.get_tuple(_config()))
        config = configs[-1]
        for turn in range(12):  # 24 entries: more than the newest page holds
            messages = [*messages, HumanMessage(f"more {turn}", id=f"m{turn}")]
            config = _put(writer, config, values={"messages": messages},
                          versions={"messages": len(messages)})
        with _rows_read() as rows:
            found = reader.get_tuple(_config())
    assert _messages(found) == messages
    # Every entry from the head the reader knew on (fewer than SINCE_PAGE):
    # the new deltas; the rest of the list comes from the cache, not its snapshot.
    assert rows == [1 + 24]


def test_a_thread_deleted_and_written_again_is_never_served_from_the_cache(url: str) -> None:
    """Same thread, same seqs, other values: the new ledger id tells them apart."""
    with LedgerSaver.from_url(url) as reader, LedgerSaver.from_url(url) as writer:
        _grow(writer, 40)
        assert reader.get_tuple(_config()) is not None
        writer.delete_thread("t")
        messages: list[Any] = []
        config = None
        for turn in range(40):  # _grow's puts and sizes, other text: the same seqs
            for message in (HumanMessage(f"x{turn}" * 20, id=f"h{turn}"),
                            AIMessage(f"y{turn}" * 20, id=f"a{turn}")):
                messages = [*messages, message]
                config = _put(writer, config, values={"messages": messages},
                              versions={"messages": len(messages)})
        found = reader.get_tuple(_config())
    assert _messages(found) == messages


def _checkpoint(seq: int, fresh: list[str]) -> CheckpointEntry:
    return CheckpointEntry("c", None, ("json", b"{}"), ("json", b"{}"), fresh, {}, seq=seq)


def test_the_cache_keeps_only_what_the_latest_checkpoint_needs() -> None:
    cache = ValueCache()
    old = ItemsEntry("messages", [("str", b"a")], None, seq=1)
    snap = ItemsEntry("messages", [("str", b"a"), ("str", b"b")], None, seq=3)
    delta = ItemsEntry("messages", [("str", b"c")], 3, seq=5)
    other = ValueEntry("count", ("json", b"2"), seq=6)
    latest = CheckpointEntry("c", None, ("json", b"{}"), ("json", b"{}"), ["count"],
                             {"messages": 5}, seq=7)  # count at 6, messages at 5 on 3
    cache.hold("s", "L1", latest, {1: old, 3: snap, 5: delta, 6: other})
    assert dict(cache.get("s", "L1")) == {3: snap, 5: delta, 6: other}
    assert cache.get("s", "L2") == {}  # another ledger of the same session
    cache.forget("s")
    assert cache.get("s", "L1") == {}


def test_a_read_that_added_nothing_keeps_what_is_held_for_that_checkpoint() -> None:
    """What ``get`` returned is kept as it is only for the same checkpoint, when
    the read added no entry: else held anew, what that checkpoint needs."""
    cache = ValueCache()
    snap = ItemsEntry("messages", [("str", b"a")], None, seq=1)
    delta = ItemsEntry("messages", [("str", b"b")], 1, seq=2)
    first = CheckpointEntry("c1", None, ("json", b"{}"), ("json", b"{}"), [],
                            {"messages": 2}, seq=3)
    cache.hold("s", "L", first, {1: snap, 2: delta})
    got = cache.get("s", "L")
    cache.hold("s", "L", first, {2: delta}, got)
    assert cache.get("s", "L") is got  # kept as it is: nothing new, the same checkpoint
    older = CheckpointEntry("c0", None, ("json", b"{}"), ("json", b"{}"), [],
                            {"messages": 1}, seq=3 - 1)
    cache.hold("s", "L", older, {}, got)  # another checkpoint: only what it needs
    assert dict(cache.get("s", "L")) == {1: snap}
    got = cache.get("s", "L")
    more = ItemsEntry("messages", [("str", b"c")], 2, seq=4)
    latest = CheckpointEntry("c2", None, ("json", b"{}"), ("json", b"{}"), [],
                             {"messages": 4}, seq=5)
    cache.hold("s", "L", latest, {2: delta, 4: more}, got)  # the read added entries
    assert dict(cache.get("s", "L")) == {1: snap, 2: delta, 4: more}


def test_the_cache_stays_within_its_budget_and_holds_nothing_without_a_ledger() -> None:
    cache = ValueCache(budget=1_000)
    value = ValueEntry("doc", ("str", b"x" * 400), seq=1)
    for session in ("a", "b", "c"):
        cache.hold(session, "L", _checkpoint(2, ["doc"]), {1: value})
    assert cache.get("a", "L") == {}  # the least recently used went first
    assert cache.get("b", "L") and cache.get("c", "L")
    cache.hold("big", "L", _checkpoint(2, ["doc"]),
               {1: ValueEntry("doc", ("str", b"x" * 2_000), seq=1)})
    assert cache.get("big", "L") == {}
    cache.hold("none", None, _checkpoint(2, ["doc"]), {1: value})
    assert cache.get("none", None) == {}


@pytest.mark.parametrize("count", [0, 1, 15, 16, 65_535, 65_536])
def test_msgpack_items_read_as_one_array_equal_the_items_read_one_by_one(count: int) -> None:
    serde = JsonPlusSerializer()
    pool: list[Any] = [{"k": [1, 2.5, None]}, 7, "s"]
    if count < 100:  # messages too; the array-size boundaries need only the count
        pool += [HumanMessage("q", id="h"), AIMessage("a" * 50, id="a")]
    typed = [serde.dumps_typed(value) for value in pool]
    items = [typed[i % len(typed)] for i in range(count)]
    joined = msgpack_array(items)
    assert joined is not None
    assert serde.loads_typed(joined) == [serde.loads_typed(item) for item in items]


def test_items_of_another_kind_are_not_joined() -> None:
    assert msgpack_array([("msgpack", b"\x01"), ("json", b"1")]) is None


def _typed(*texts: str) -> list[tuple[str, bytes]]:
    return [("str", text.encode()) for text in texts]


def test_a_step_compares_the_previous_items_it_holds_instead_of_hashing_them() -> None:
    snapshot = ItemsEntry("messages", _typed("a" * 100, "b" * 100), None, seq=7)
    chain = plan(Items(snapshot.items), None, None).chain.at(7)
    unhashed = replace(chain, digest="not the digest of those items")

    grown = plan(Items(_typed("a" * 100, "b" * 100, "c")), unhashed, 7, {7: snapshot})
    # The digest matches, but the items stored at seq 7 are not the value's first ones.
    edited = plan(Items(_typed("a" * 100, "b" * 100, "c")), chain, 7,
                  {7: replace(snapshot, items=_typed("a" * 100, "B" * 100))})

    assert grown.prev == 7 and grown.items == _typed("c")  # the bytes decided: a delta
    # whose digest extends the one recorded, hashing only the new item
    assert grown.chain.digest != Items(_typed("a" * 100, "b" * 100, "c")).digest(3)
    assert edited.prev is None  # held items that differ: a snapshot, whatever the digest


def test_without_the_previous_items_the_digest_decides() -> None:
    chain = plan(Items(_typed("a", "b")), None, None).chain.at(7)
    grown = plan(Items(_typed("a", "b", "c")), chain, 7)
    assert grown.prev == 7 and grown.chain.digest == Items(_typed("a", "b", "c")).digest(3)
    stale = plan(Items(_typed("a", "b", "c")), replace(chain, digest="other"), 7)
    assert stale.prev is None
