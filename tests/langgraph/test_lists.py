"""Lists that grow are stored as deltas: the encoding (no I/O), then through the saver."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import START, MessagesState, StateGraph

from chatledger import CorruptEntryError, Message
from chatledger.langgraph import LedgerSaver
from chatledger.langgraph._entries import Chain, CheckpointEntry, ItemsEntry, decode, encode
from chatledger.langgraph._layout import session_id
from chatledger.langgraph._lists import DELTA_SHARE, Items, assemble, first_missing, plan, size
from tests.langgraph.test_saver import _config, _put


def _items(*texts: str) -> Items:
    return Items([("str", text.encode()) for text in texts])


def _snapshot(value: Items, seq: int) -> tuple[Chain, int]:
    """The chain a snapshot of ``value`` stored at ``seq`` leaves, with its seq."""
    return plan(value, None, None).chain.at(seq), seq


# -- the encoding -------------------------------------------------------------

def test_a_list_that_only_grew_stores_its_new_items_and_where_it_continues() -> None:
    chain, head = _snapshot(_items("a" * 100, "b" * 100), 7)

    stored = plan(_items("a" * 100, "b" * 100, "c"), chain, head)

    assert stored.items == [("str", b"c")]
    assert stored.prev == 7
    assert stored.chain.snap == 7 and stored.chain.items == 3
    assert stored.chain.delta_bytes == size([("str", b"c")])
    assert stored.chain.digest == _items("a" * 100, "b" * 100, "c").digest(3)


@pytest.mark.parametrize("new", [
    ("a" * 100, "B" * 100, "c"),  # an item edited
    ("b" * 100, "c"),  # an item removed (RemoveMessage)
    ("a" * 100,),  # shorter
    ("b" * 100, "a" * 100),  # reordered
])
def test_anything_but_growth_is_stored_whole(new: tuple[str, ...]) -> None:
    chain, head = _snapshot(_items("a" * 100, "b" * 100), 7)

    stored = plan(_items(*new), chain, head)

    assert stored.prev is None and stored.chain.snap is None
    assert stored.items == _items(*new).items
    assert stored.chain.delta_bytes == 0


def test_an_unchanged_list_is_an_empty_delta() -> None:
    chain, head = _snapshot(_items("a" * 100), 3)

    stored = plan(_items("a" * 100), chain, head)

    assert stored.items == [] and stored.prev == 3


def test_snapshots_come_when_deltas_outgrow_their_share_so_bytes_per_step_stay_flat() -> None:
    texts: list[str] = []
    chain: Chain | None = None
    head: int | None = None
    stored_bytes, snapshots = [], []
    for step in range(1, 401):
        texts.append(f"{step:04}" + "m" * 96)
        stored = plan(_items(*texts), chain, head)
        stored_bytes.append(size(stored.items))
        if stored.prev is None:
            snapshots.append(step)
        chain, head = stored.chain.at(step), step
        assert chain.delta_bytes <= DELTA_SHARE * chain.snap_bytes or stored.prev is None

    # Snapshots get rarer as the list grows: each holds 1 + DELTA_SHARE times the last.
    assert snapshots[:5] == [1, 2, 4, 7, 11]
    assert all(b / a >= 1 + DELTA_SHARE - 0.01 for a, b in itertools.pairwise(snapshots[3:]))
    # Amortized, a step stores its new item plus at most (1 + 1/DELTA_SHARE) times as much
    # again (snapshots), over the whole run and its second half alike: flat as the list grows.
    item = size(_items(texts[0]).items)
    for window in (stored_bytes, stored_bytes[200:]):
        assert sum(window) / len(window) <= item * (2 + 1 / DELTA_SHARE)


def test_an_empty_list_starts_over_at_its_first_item() -> None:
    chain, head = _snapshot(_items(), 1)

    stored = plan(_items("a"), chain, head)

    assert stored.prev is None and stored.items == [("str", b"a")]


def test_a_chain_assembles_from_its_snapshot_and_deltas_or_says_what_is_missing() -> None:
    entries: dict[int, Any] = {
        2: ItemsEntry("m", [("str", b"a"), ("str", b"b")], None, 2),
        5: ItemsEntry("m", [("str", b"c")], 2, 5),
        9: ItemsEntry("m", [], 5, 9),
        11: ItemsEntry("m", [("str", b"d")], 9, 11),
    }
    assert assemble(11, entries) == [("str", b"a"), ("str", b"b"), ("str", b"c"), ("str", b"d")]
    assert first_missing(11, entries) is None

    del entries[5]
    assert assemble(11, entries) is None
    assert first_missing(11, entries) == 5


def test_items_and_chains_are_stored_exactly() -> None:
    items = ItemsEntry("messages", [("msgpack", b"\x00\xff"), ("null", b"")], 4)
    chain = Chain(4, 3, "d" * 32, 120, 9)
    checkpoint = CheckpointEntry("c1", None, ("json", b"{}"), ("json", b"{}"), ["m"], {},
                                 chains={"m": chain, "n": Chain(None, 0, "e" * 32, 0, 0)})

    back = decode("s", _stored(encode(items, "v"), 6))
    assert back == ItemsEntry("messages", items.items, 4, 6)
    assert decode("s", _stored(encode(checkpoint, "c"), 7)) == CheckpointEntry(
        **{**checkpoint.__dict__, "seq": 7})


def test_an_items_entry_pointing_forward_is_corrupt() -> None:
    with pytest.raises(CorruptEntryError, match="not before it"):
        decode("s", _stored(encode(ItemsEntry("m", [], 9), "v"), 6))


def _stored(message: Message, seq: int) -> Message:
    return Message(role=message.role, content=message.content, id=message.id,
                   metadata=message.metadata, data=message.data, seq=seq)


# -- through the saver --------------------------------------------------------

def _stored_items(saver: LedgerSaver, thread: str = "t") -> list[ItemsEntry]:
    history = saver.store.session(session_id(thread, "")).read()
    entries = (decode("s", m) for m in history.messages)
    return [e for e in entries if isinstance(e, ItemsEntry)]


def _grow(saver: LedgerSaver, turns: int, thread: str = "t") -> tuple[list[Any], list[Any]]:
    """A chat of ``turns`` exchanges, a put per message; the configs and values put."""
    messages: list[Any] = []
    configs, values = [], []
    config = None
    for turn in range(turns):
        for message in (HumanMessage(f"q{turn}" * 20, id=f"h{turn}"),
                        AIMessage(f"a{turn}" * 20, id=f"a{turn}")):
            messages = [*messages, message]
            config = _put(saver, config, thread=thread, values={"messages": messages},
                          versions={"messages": len(messages)})
            configs.append(config)
            values.append(messages)
    return configs, values


def test_a_growing_conversation_stores_each_message_about_once(saver: LedgerSaver) -> None:
    configs, values = _grow(saver, 30)

    stored = _stored_items(saver)
    assert len(stored) == 60
    assert sum(1 for e in stored if e.prev is None) <= 12  # snapshots, as the list doubles
    total = sum(len(e.items) for e in stored)
    assert total <= 60 * (2 + 1 / DELTA_SHARE)  # the bound of the encoding's own test
    for config, value in zip(configs[::7] + configs[-1:], values[::7] + values[-1:], strict=True):
        found = saver.get_tuple(config)
        assert found is not None and found.checkpoint["channel_values"] == {"messages": value}
    listed = list(saver.list(_config()))
    assert [t.checkpoint["channel_values"]["messages"] for t in listed] == values[::-1]


def test_a_fork_grows_its_own_branch_from_an_older_version(saver: LedgerSaver) -> None:
    configs, values = _grow(saver, 3)
    old_id = configs[1]["configurable"]["checkpoint_id"]
    branch = [*values[1], HumanMessage("other", id="x")]
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": branch}
    checkpoint["channel_versions"] = {"messages": 9}
    replay = _config(checkpoint_id=old_id, metadata={"checkpoint_id": old_id})
    forked = saver.put(replay, checkpoint, {"source": "fork", "step": 1}, {"messages": 9})

    found = saver.get_tuple(forked)
    assert found is not None and found.checkpoint["channel_values"]["messages"] == branch
    latest = saver.get_tuple(configs[-1])
    assert latest is not None and latest.checkpoint["channel_values"]["messages"] == values[-1]
    assert _stored_items(saver)[-1].items and len(_stored_items(saver)[-1].items) == 1


def test_copy_and_prune_keep_deltas_whole(saver: LedgerSaver) -> None:
    configs, values = _grow(saver, 10)
    saver.prune(["t"])  # the latest restated whole: the copy below starts past seq 1
    more = [*values[-1], HumanMessage("after prune", id="p")]
    config = _put(saver, configs[-1], values={"messages": more}, versions={"messages": 99})
    assert _stored_items(saver)[-1].prev is not None  # the restated list took a delta

    saver.copy_thread("t", "copy")

    for thread in ("t", "copy"):
        found = saver.get_tuple(_config(thread))
        assert found is not None
        assert found.checkpoint["channel_values"]["messages"] == more
        assert found.config["configurable"]["checkpoint_id"] == (
            config["configurable"]["checkpoint_id"])


def test_a_channel_that_stops_being_a_list_is_stored_as_a_value(saver: LedgerSaver) -> None:
    config = _put(saver, values={"x": [1, 2], "y": [0]})
    config = _put(saver, config, values={"x": [1, 2, 3], "y": [0]},
                  versions={"x": 2, "y": 1}, new={"x": 2})
    config = _put(saver, config, values={"x": (1, 2, 3, 4), "y": [0]},
                  versions={"x": 3, "y": 1}, new={"x": 3})
    config = _put(saver, config, values={"x": [9], "y": [0, 1]},
                  versions={"x": 4, "y": 2}, new={"x": 4, "y": 2})

    found = saver.get_tuple(config)
    assert found is not None
    assert found.checkpoint["channel_values"] == {"x": [9], "y": [0, 1]}
    listed = [t.checkpoint["channel_values"]["x"] for t in saver.list(_config())]
    assert listed == [[9], [1, 2, 3, 4], [1, 2, 3], [1, 2]]


# -- any sequence of list values round-trips ------------------------------------

_INT = st.integers(-(2**63), 2**63 - 1)  # what the serializer's msgpack holds
_ITEM = st.one_of(_INT, st.text(max_size=30), st.none(), st.booleans(),
                  st.lists(_INT, max_size=3),
                  st.builds(lambda t, i: HumanMessage(t, id=f"m{i}"),
                            st.text(max_size=20), st.integers(0, 5)))


@st.composite
def _histories(draw: st.DrawFn) -> list[list[Any]]:
    """Versions of one list: appends mostly, with edits, removals and restarts."""
    value: list[Any] = []
    versions = []
    for _ in range(draw(st.integers(1, 25))):
        action = draw(st.sampled_from(["append", "append", "append", "edit", "remove",
                                       "same", "clear"]))
        if action == "append":
            value = value + draw(st.lists(_ITEM, min_size=1, max_size=3))
        elif action == "edit" and value:
            value = [*value]
            value[draw(st.integers(0, len(value) - 1))] = draw(_ITEM)
        elif action == "remove" and value:
            at = draw(st.integers(0, len(value) - 1))
            value = value[:at] + value[at + 1:]
        elif action == "clear":
            value = []
        versions.append(value)
    return versions


_THREADS = itertools.count()


@pytest.fixture(scope="module")
def memory_saver() -> Any:
    with LedgerSaver.from_url("memory://lists-property") as opened:
        yield opened


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=_histories())
def test_any_sequence_of_list_values_round_trips(memory_saver: LedgerSaver,
                                                 history: list[Any]) -> None:
    thread = f"t{next(_THREADS)}"  # a thread of each example's own
    configs = []
    config = None
    for version, value in enumerate(history, start=1):
        config = _put(memory_saver, config, thread=thread, values={"l": value},
                      versions={"l": version})
        configs.append(config)

    latest = memory_saver.get_tuple(_config(thread))
    assert latest is not None and latest.checkpoint["channel_values"] == {"l": history[-1]}
    for config, value in zip(configs, history, strict=True):
        found = memory_saver.get_tuple(config)
        assert found is not None and found.checkpoint["channel_values"] == {"l": value}
    listed = [t.checkpoint["channel_values"]["l"]
              for t in memory_saver.list(_config(thread))]
    assert listed == history[::-1]


# -- a real graph: add_messages appends, RemoveMessage removes -----------------

def test_a_chat_graph_stores_deltas_until_a_message_is_removed() -> None:
    def reply(state: MessagesState) -> dict[str, Any]:
        if state["messages"][-1].content == "forget":
            return {"messages": [RemoveMessage(id=state["messages"][0].id)]}
        return {"messages": [AIMessage("ok")]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    config: Any = {"configurable": {"thread_id": "t"}}
    with LedgerSaver.from_url("memory://lists-graph") as saver:
        graph = builder.compile(checkpointer=saver)
        for text in ["a" * 200, "b" * 200, "c" * 200, "d" * 200, "forget"]:
            graph.invoke({"messages": [HumanMessage(text)]}, config)

        state = graph.get_state(config).values["messages"]
        assert [m.content for m in state] == ["ok", "b" * 200, "ok", "c" * 200, "ok",
                                              "d" * 200, "ok", "forget"]
        stored = _stored_items(saver)
        assert any(e.prev is not None for e in stored)  # appends were deltas
        assert stored[-1].prev is None and len(stored[-1].items) == 8  # the removal was whole
        history = [s.values["messages"] for s in graph.get_state_history(config)]
        assert [len(h) for h in history[:3]] == [8, 9, 8]


def test_deleting_a_run_keeps_the_deltas_later_checkpoints_continue(saver: LedgerSaver) -> None:
    messages: list[Any] = []
    config = None
    for run in ("r1", "r2", "r3"):
        for i in range(4):
            messages = [*messages, HumanMessage(f"{run}-{i}" * 30, id=f"{run}{i}")]
            config = _put(saver, config, values={"messages": messages},
                          versions={"messages": len(messages)}, run_id=run)

    saver.delete_for_runs(["r2"])  # r3's first lists continue r2's snapshot (7 items)

    listed = list(saver.list(_config()))
    assert [len(t.checkpoint["channel_values"]["messages"]) for t in listed] == [
        12, 11, 10, 9, 4, 3, 2, 1]
    assert listed[0].checkpoint["channel_values"]["messages"] == messages


def test_a_value_gone_from_under_a_checkpoint_is_a_corrupt_entry(saver: LedgerSaver) -> None:
    """Loud, never an empty channel: a trim behind the saver's back removed the
    snapshot the latest checkpoint's messages are built on."""
    configs, _ = _grow(saver, 3)
    saver.store.session(session_id("t", "")).trim(keep_last=2)
    with pytest.raises(CorruptEntryError, match="value of channel 'messages'"):
        saver.get_tuple(configs[-1])
