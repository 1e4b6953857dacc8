"""The sync saver's own guarantees: what conformance does not test."""

from __future__ import annotations

import sqlite3
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

import psycopg
import pytest
import redis
from langgraph.checkpoint.base import CheckpointMetadata, empty_checkpoint
from langgraph.checkpoint.serde.types import ERROR, INTERRUPT

from chatledger import CorruptEntryError, Store, system
from chatledger.langgraph import CheckpointConflict, LedgerSaver
from chatledger.langgraph._layout import (
    index_session_id,
    session_id,
    split_session_id,
    thread_prefix,
)


def _config(thread: str = "t", ns: str = "", checkpoint_id: str | None = None,
            **extra: Any) -> Any:
    configurable = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable, **extra}


def _put(saver: LedgerSaver, parent: Any = None, *, thread: str = "t", ns: str = "",
         values: dict[str, Any] | None = None, versions: dict[str, Any] | None = None,
         new: dict[str, Any] | None = None, **metadata: Any) -> Any:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = dict(values or {})
    checkpoint["channel_versions"] = dict(versions or dict.fromkeys(values or {}, 1))
    parent_id = parent["configurable"]["checkpoint_id"] if parent else None
    md: CheckpointMetadata = {"source": "loop", "step": 0, **metadata}  # type: ignore[typeddict-item]
    return saver.put(_config(thread, ns, parent_id), checkpoint, md,
                     new if new is not None else checkpoint["channel_versions"])


def _entries(saver: LedgerSaver, thread: str = "t", ns: str = "") -> int:
    info = saver.store.session(session_id(thread, ns)).info()
    return 0 if info is None else info.count


def test_a_chain_reads_back_latest_first_with_values_and_parents(saver: LedgerSaver) -> None:
    first = _put(saver, values={"a": 1, "b": [1, 2]})
    second = _put(saver, first, values={"a": 2, "b": [1, 2]}, versions={"a": 2, "b": 1},
                  new={"a": 2})

    latest = saver.get_tuple(_config())
    assert latest is not None
    assert latest.config == second
    assert latest.checkpoint["channel_values"] == {"a": 2, "b": [1, 2]}
    assert latest.parent_config == first
    listed = list(saver.list(_config()))
    assert [t.config for t in listed] == [second, first]
    assert listed[1].checkpoint["channel_values"] == {"a": 1, "b": [1, 2]}


def test_unchanged_values_are_stored_once_however_long_the_thread(saver: LedgerSaver) -> None:
    config = _put(saver, values={"big": "x" * 1000, "n": 0})
    for step in range(1, 40):
        config = _put(saver, config, values={"big": "x" * 1000, "n": step},
                      versions={"big": 1, "n": step + 1}, new={"n": step + 1})

    # A value entry per changed value, one checkpoint entry per put: 2 + 2*40 - 1 - ...
    assert _entries(saver) == 2 + 1 + 39 * 2
    latest = saver.get_tuple(_config())
    assert latest is not None
    assert latest.checkpoint["channel_values"] == {"big": "x" * 1000, "n": 39}
    oldest = list(saver.list(_config()))[-1]
    assert oldest.checkpoint["channel_values"] == {"big": "x" * 1000, "n": 0}
    found = saver.get_tuple(oldest.config)  # 80 entries back: paged, not lost
    assert found is not None and found.config == oldest.config


def test_put_and_put_writes_store_once_when_retried(saver: LedgerSaver) -> None:
    checkpoint = empty_checkpoint()
    md: Any = {"source": "input", "step": -1}
    stored = saver.put(_config(), checkpoint, md, {})
    assert saver.put(_config(), checkpoint, md, {}) == stored
    saver.put_writes(stored, [("ch", "v"), ("other", 2)], "task-1", "p")
    saver.put_writes(stored, [("ch", "v"), ("other", 2)], "task-1", "p")

    assert _entries(saver) == 2
    found = saver.get_tuple(_config())
    assert found is not None
    assert found.pending_writes == [("task-1", "ch", "v"), ("task-1", "other", 2)]


def test_pending_writes_follow_task_path_order_and_upsert_special_channels(
    saver: LedgerSaver,
) -> None:
    stored = _put(saver)
    saver.put_writes(stored, [("ch", "second")], "task-b", "~b")
    saver.put_writes(stored, [("ch", "first")], "task-z", "~a")
    saver.put_writes(stored, [("ch", "ignored: idx 0 of task-b is stored")], "task-b", "~b")
    saver.put_writes(stored, [(ERROR, "boom"), (INTERRUPT, "ask")], "task-b", "~b")
    saver.put_writes(stored, [(ERROR, "boom again")], "task-b", "~b")
    saver.put_writes(stored, [], "task-c")

    found = saver.get_tuple(stored)
    assert found is not None
    assert found.pending_writes == [
        ("task-z", "ch", "first"),
        ("task-b", INTERRUPT, "ask"), ("task-b", ERROR, "boom again"), ("task-b", "ch", "second"),
    ]


def test_put_writes_without_a_checkpoint_id_is_refused(saver: LedgerSaver) -> None:
    with pytest.raises(ValueError, match="checkpoint_id"):
        saver.put_writes(_config(), [("ch", 1)], "task")
    assert _entries(saver) == 0


def test_a_stale_parent_is_a_conflict_and_nothing_is_stored(saver: LedgerSaver) -> None:
    first = _put(saver)
    _put(saver, first)
    before = _entries(saver)

    with pytest.raises(CheckpointConflict) as caught:
        _put(saver, first)  # a second writer that also started from `first`
    assert caught.value.parent == first["configurable"]["checkpoint_id"]
    assert caught.value.thread_id == "t"
    with pytest.raises(CheckpointConflict):
        _put(saver, source="input", step=-1)  # believed the thread was empty
    assert _entries(saver) == before


def test_forks_that_are_asked_for_are_stored(saver: LedgerSaver, url: str) -> None:
    first = _put(saver, values={"a": 1})
    _put(saver, first, values={"a": 2}, versions={"a": 2})
    parent_id = first["configurable"]["checkpoint_id"]

    replay = empty_checkpoint()  # a fork holds its values, as LangGraph's __copy__ does
    replay["channel_values"] = {"a": 1}
    replay["channel_versions"] = {"a": 1}
    config = _config(checkpoint_id=parent_id, metadata={"checkpoint_id": parent_id})
    forked = saver.put(config, replay, {"source": "fork", "step": 1}, {})
    found = saver.get_tuple(forked)
    assert found is not None and found.checkpoint["channel_values"] == {"a": 1}

    with LedgerSaver.from_url(url, allow_forks=True) as lenient:
        _put(lenient, first)
        _put(lenient, source="input", step=-1)
    assert len(list(saver.list(_config()))) == 5


def test_delete_thread_removes_every_key_or_row(saver: LedgerSaver, url: str) -> None:
    for ns in ("", "child:1"):
        stored = _put(saver, ns=ns, values={"a": 1})
        saver.put_writes(stored, [("a", 2)], "task")
    _put(saver, thread="other")

    saver.delete_thread("t")

    assert saver.get_tuple(_config()) is None
    assert list(saver.list(_config("t"))) == []
    assert {split_session_id(s) for s in saver.store.sessions()} == {None, ("other", "")}
    # What is left is the other thread: its index and its namespace.
    assert _stored_rows(url, saver.store) == {index_session_id("other"), session_id("other", "")}


def _stored_rows(url: str, store: Store) -> set[str]:
    """Sessions the backend holds anything of, read from the backend itself."""
    namespace = store.namespace
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        with sqlite3.connect(parsed.path) as conn:
            return {sid for table in ("sessions", "entries", "message_ids")
                    for (sid,) in conn.execute(f"SELECT sid FROM {table} WHERE ns = ?",
                                               (namespace,))}
    if parsed.scheme == "redis":
        client = redis.Redis(host=parsed.hostname, port=parsed.port)
        keys = [k.decode() for k in client.scan_iter(match=f"*{{{namespace}:*")]
        client.close()
        # chatledger:{<ns>:<session>}:meta|log|ids, each part escaped
        return {unquote(k.split("{", 1)[1].rsplit("}", 1)[0].split(":", 1)[1]) for k in keys}
    if parsed.scheme == "postgresql":
        with psycopg.connect(url.split("?", 1)[0]) as conn:
            return {sid for table in ("sessions", "entries", "message_ids")
                    for (sid,) in conn.execute(
                        f"SELECT sid FROM chatledger.{table} WHERE ns = %s", (namespace,))}
    assert parse_qs(parsed.query)["namespace"] == [namespace]
    return set(store.sessions())


def test_list_spans_namespaces_and_threads_and_pages(saver: LedgerSaver) -> None:
    root = _put(saver, step=1)
    _put(saver, ns="child:1", step=2)
    _put(saver, thread="u", step=3)
    assert {t.metadata["step"] for t in saver.list({"configurable": {"thread_id": "t"}})} == {1, 2}
    assert {t.metadata["step"] for t in saver.list(None)} == {1, 2, 3}
    assert [t.metadata["step"] for t in saver.list(None, filter={"step": 3})] == [3]
    assert list(saver.list(None, limit=0)) == []
    assert len(list(saver.list(None, limit=2))) == 2
    assert [t.config for t in saver.list(_config(checkpoint_id=root["configurable"]
                                                 ["checkpoint_id"]))] == [root]


def test_delete_for_runs_hides_the_runs_checkpoints(saver: LedgerSaver) -> None:
    first = _put(saver, run_id="r1")
    second = _put(saver, first, run_id="r2")
    saver.put_writes(second, [("a", 1)], "task")
    saver.delete_for_runs(["r2"])
    saver.delete_for_runs([])

    latest = saver.get_tuple(_config())
    assert latest is not None and latest.config == first
    assert [t.metadata["run_id"] for t in saver.list(_config())] == ["r1"]
    _put(saver, first, run_id="r3")  # the thread goes on from what is left


def test_copy_thread_copies_every_namespace_whole(saver: LedgerSaver) -> None:
    first = _put(saver, values={"a": 1, "b": 2})
    second = _put(saver, first, values={"a": 3, "b": 2}, versions={"a": 2, "b": 1},
                  new={"a": 2})
    saver.put_writes(second, [("a", 4)], "task")
    _put(saver, ns="child:1", values={"c": 5})
    saver.prune(["t"])  # the source starts past seq 1: pointers must move

    saver.copy_thread("t", "copy")

    copied = saver.get_tuple(_config("copy"))
    assert copied is not None
    assert copied.checkpoint["channel_values"] == {"a": 3, "b": 2}
    assert copied.pending_writes == [("task", "a", 4)]
    child = saver.get_tuple(_config("copy", "child:1"))
    assert child is not None and child.checkpoint["channel_values"] == {"c": 5}
    with pytest.raises(ValueError, match=r"^copy_thread: the target thread 'copy' already has "
                                         r"checkpoints in namespace '(|child:1)'"):
        saver.copy_thread("t", "copy")


def test_prune_keeps_the_latest_checkpoint_whole(saver: LedgerSaver) -> None:
    config = _put(saver, values={"kept": "old value", "n": 0})
    for step in range(1, 5):
        config = _put(saver, config, values={"kept": "old value", "n": step},
                      versions={"kept": 1, "n": step + 1}, new={"n": step + 1})
    saver.put_writes(config, [(INTERRUPT, "ask")], "task")
    _put(saver, thread="gone")

    saver.prune(["t", "absent"], strategy="keep_latest")
    saver.prune(["gone"], strategy="delete")

    assert _entries(saver) == 4  # two values, the checkpoint, its writes
    latest = saver.get_tuple(_config())
    assert latest is not None and latest.config == config
    assert latest.checkpoint["channel_values"] == {"kept": "old value", "n": 4}
    assert latest.pending_writes == [("task", INTERRUPT, "ask")]
    assert len(list(saver.list(_config()))) == 1
    assert saver.get_tuple(_config("gone")) is None
    _put(saver, config)  # and the thread goes on
    with pytest.raises(ValueError, match="strategy"):
        saver.prune(["t"], strategy="everything")


def test_prune_of_a_namespace_whose_checkpoints_were_all_deleted(saver: LedgerSaver) -> None:
    _put(saver, run_id="r1")
    saver.delete_for_runs(["r1"])
    saver.prune(["t"])
    assert list(saver.store.sessions()) == [index_session_id("t")]


def test_foreign_messages_are_skipped_and_corrupt_entries_are_loud(saver: LedgerSaver) -> None:
    stored = _put(saver)
    session = saver.store.session(session_id("t", ""))
    session.append([system("a note someone else wrote")])
    found = saver.get_tuple(_config())
    assert found is not None and found.config == stored

    session.append([system("bad", metadata={"langgraph": 1, "kind": "CheckpointEntry"})])
    with pytest.raises(CorruptEntryError):
        saver.get_tuple(_config())


def test_thread_ids_are_data_and_namespaced(saver: LedgerSaver) -> None:
    assert thread_prefix("t1") != thread_prefix("t10")[: len(thread_prefix("t1"))]
    assert split_session_id(session_id("a:b", "c:d")) == ("a:b", "c:d")
    assert split_session_id("not-ours") is None
    assert split_session_id("lg:x:") is None
    assert split_session_id("lg:5:ab") is None
    with pytest.raises(ValueError, match="thread_id"):
        thread_prefix("")


def test_versions_increase(saver: LedgerSaver) -> None:
    first = saver.get_next_version(None, None)
    second = saver.get_next_version(first, None)
    assert first < second < saver.get_next_version(second, None)
    # A thread counting in integers (copied from DynamoDBSaver) goes on in integers:
    # LangGraph compares a channel's versions, and a str with an int raises.
    assert saver.get_next_version(7, None) == 8  # type: ignore[arg-type]


def test_unchanged_values_far_back_are_read_with_the_latest(saver: LedgerSaver) -> None:
    config = _put(saver, values={"a": "first", "b": "second", "n": 0})
    for step in range(1, 25):  # the values of a and b fall out of the first page
        config = _put(saver, config, values={"a": "first", "b": "second", "n": step},
                      versions={"a": 1, "b": 1, "n": step + 1}, new={"n": step + 1})

    latest = saver.get_tuple(_config())
    assert latest is not None
    assert latest.checkpoint["channel_values"] == {"a": "first", "b": "second", "n": 24}


def test_list_by_id_and_before_skip_the_other_checkpoints(saver: LedgerSaver) -> None:
    first = _put(saver, step=1)
    second = _put(saver, first, step=2)
    third = _put(saver, second, step=3)

    assert [t.config for t in saver.list(second)] == [second]
    assert [t.config for t in saver.list(_config(), before=third)] == [second, first]
    assert [t.config for t in saver.list(_config(), before=third, limit=1)] == [second]


def test_sessions_that_are_no_namespace_are_not_listed(saver: LedgerSaver) -> None:
    _put(saver, step=1)
    saver.store.session("lg:no thread here").append([system("someone else's")])
    assert [t.metadata["step"] for t in saver.list(None)] == [1]
    saver.delete_for_runs(["r1"])  # reads it too, and leaves it alone
    assert saver.store.session("lg:no thread here").info() is not None


def test_delete_for_runs_leaves_other_threads_alone(saver: LedgerSaver) -> None:
    kept = _put(saver, thread="kept", run_id="r1")
    _put(saver, thread="gone", run_id="r2")
    saver.delete_for_runs(["r2"])
    assert [t.config for t in saver.list(None)] == [kept]


def test_copy_thread_copies_past_one_page(saver: LedgerSaver) -> None:
    first = _put(saver, values={"a": 1})
    session = saver.store.session(session_id("t", ""))
    for batch in range(3):  # 600 entries a walk skips: the copy reads them in pages
        session.append([system(f"note {batch}.{i}") for i in range(200)])
    second = _put(saver, first, values={"a": 2}, versions={"a": 2})

    saver.copy_thread("t", "copy")

    copied = saver.get_tuple(_config("copy"))
    assert copied is not None and copied.config == _config("copy", "", second["configurable"]
                                                          ["checkpoint_id"])
    assert copied.checkpoint["channel_values"] == {"a": 2}
    assert _entries(saver, "copy") == _entries(saver, "t") == 604
