"""copy_threads when things go wrong: a copy stopped midway, a source written during
the copy, a target that already holds the thread, a source that cannot list its
threads; and the async twin, the dry run, the rules with no I/O."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.channels import DeltaChannel
from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, StateGraph

import chatledger
from chatledger import open_store
from chatledger.langgraph import (
    AsyncLedgerSaver,
    CopyReport,
    LedgerSaver,
    ThreadCopy,
    ThreadDifference,
    acompare_threads,
    acopy_threads,
    compare_threads,
    copy_threads,
)
from chatledger.langgraph._copying import (
    Outline,
    ThreadsNotListed,
    copy_order,
    new_versions,
    outline,
    outline_differences,
    put_config,
    write_groups,
    writes_by_task,
)
from tests.langgraph._copy_sources import (
    THREADS,
    _dynamodb,
    config,
    source_saver,
    write_threads,
)
from tests.langgraph._graphs import agent_graph, texts
from tests.langgraph.conftest import backend_url


@pytest.fixture
def source() -> InMemorySaver:
    saver = InMemorySaver()
    write_threads(saver, long_turns=3)
    return saver


@pytest.fixture
def target_url(tmp_path: Path, request: pytest.FixtureRequest) -> str:
    return backend_url("sqlite", request, tmp_path)


def _copy(kind: str, source: Any, url: str, **options: Any) -> CopyReport:
    """copy_threads through a LedgerSaver, or acopy_threads through an AsyncLedgerSaver."""
    if kind == "sync":
        with LedgerSaver.from_url(url) as target:
            return copy_threads(source, target, **options)

    async def main() -> CopyReport:
        async with AsyncLedgerSaver.from_url(url) as target:
            return await acopy_threads(source, target, **options)

    return asyncio.run(main())


def _compare(kind: str, source: Any, url: str, **options: Any) -> list[ThreadDifference]:
    if kind == "sync":
        with LedgerSaver.from_url(url) as target:
            return compare_threads(source, target, **options)

    async def main() -> list[ThreadDifference]:
        async with AsyncLedgerSaver.from_url(url) as target:
            return await acompare_threads(source, target, **options)

    return asyncio.run(main())


KINDS = pytest.mark.parametrize("kind", ["sync", "async"])


class Killed(BaseException):
    """The copy's process dying: nothing after it runs."""


class Dying(LedgerSaver):
    """A target that dies after ``puts`` puts, or at its first put of writes after them."""

    puts = 0
    at_writes = False

    def put(self, *args: Any) -> Any:
        if self.puts == 0 and not self.at_writes:
            raise Killed
        self.puts -= 1
        return super().put(*args)

    def put_writes(self, *args: Any) -> None:
        if self.puts == 0 and self.at_writes:
            raise Killed
        super().put_writes(*args)


def _ids(saver: Any, thread: str) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] for t in saver.list(config(thread))]


@pytest.mark.parametrize(("puts", "at_writes"), [(0, False), (7, False), (7, True), (30, True)])
def test_a_copy_stopped_anywhere_is_finished_by_running_it_again(
        source: InMemorySaver, target_url: str, puts: int, at_writes: bool) -> None:
    with Dying.from_url(target_url) as dying:
        dying.puts, dying.at_writes = puts, at_writes
        with pytest.raises(Killed):
            copy_threads(source, dying)
    with LedgerSaver.from_url(target_url) as target:
        report = copy_threads(source, target)
        assert report.ok and report.present == puts
        assert compare_threads(source, target) == []
        for thread in THREADS:  # each checkpoint stored once
            assert sorted(_ids(target, thread)) == sorted(set(_ids(source, thread)))


class WrittenDuringTheCopy(InMemorySaver):
    """A source on which a run adds a turn to ``agent`` while the copy fetches it."""

    live = False  # set once the threads are written

    def get_tuple(self, config: Any) -> CheckpointTuple | None:
        found = super().get_tuple(config)
        if self.live and config["configurable"]["thread_id"] == "agent":
            self.live = False
            agent_graph(self).invoke({"messages": [HumanMessage("and now?")]}, config)
        return found


@KINDS
def test_a_thread_written_during_the_copy_is_reported_and_copied_whole_next_time(
        target_url: str, kind: str) -> None:
    source = WrittenDuringTheCopy()
    write_threads(source, long_turns=2)
    source.live = True
    report = _copy(kind, source, target_url)
    with LedgerSaver.from_url(target_url) as target:
        assert [t.thread_id for t in report.changed] == ["agent"] and not report.ok
        assert "1 thread written on the source during the copy" in report.summary()
        assert str(report.changed[0]) == ("agent: written on the source during the copy; "
                                          "copy it again")
        # What was copied is the thread as it was: a whole history, the new turn missing.
        missing = _compare(kind, source, target_url, thread_ids=["agent"])
        assert missing and {d.what for d in missing} == {"missing on the target"}
        assert texts(agent_graph(target).get_state(config("agent")).values)[-1] == (
            "Your name is Ada.")
    again = _copy(kind, source, target_url)
    assert again.ok and again.checkpoints > 0
    assert _compare(kind, source, target_url) == []


class Vanishing(InMemorySaver):
    """A source whose ``agent`` thread is deleted between the listing and the fetch."""

    def get_tuple(self, config: Any) -> CheckpointTuple | None:
        if config["configurable"]["thread_id"] == "agent":
            self.delete_thread("agent")
        return super().get_tuple(config)


@KINDS
def test_a_thread_deleted_on_the_source_during_the_copy_is_reported(
        target_url: str, kind: str) -> None:
    source = Vanishing()
    write_threads(source, long_turns=2)
    report = _copy(kind, source, target_url, thread_ids=["agent", "long", "agent"])
    agent = next(t for t in report.threads if t.thread_id == "agent")
    assert agent.changed and agent.checkpoints == 0
    assert [t.thread_id for t in report.threads] == ["agent", "long"]
    assert len(report.changed) == 1


@KINDS
def test_a_thread_the_target_holds_other_checkpoints_of_is_left_alone(
        source: InMemorySaver, target_url: str, kind: str) -> None:
    with LedgerSaver.from_url(target_url) as target:
        agent_graph(target).invoke({"messages": [HumanMessage("already here")]},
                                   config("agent"))
        before = _ids(target, "agent")
    report = _copy(kind, source, target_url)
    assert [t.thread_id for t in report.refused] == ["agent"]
    assert "the target holds 3 checkpoint(s) the source has not" in report.summary()
    with LedgerSaver.from_url(target_url) as target:
        assert _ids(target, "agent") == before
    assert _compare(kind, source, target_url, thread_ids=["forked", "long"]) == []
    differences = _compare(kind, source, target_url, thread_ids=["agent"])
    assert {d.what for d in differences} == {"missing on the target", "on the target only"}


class Interleaving(LedgerSaver):
    """A target on which a service starts ``agent`` right before the copy's first put."""

    def put(self, config: Any, *args: Any) -> Any:
        if config["configurable"]["thread_id"] == "agent" and not self._started:
            self._started = True
            with LedgerSaver.from_url(self.url) as other:
                agent_graph(other).invoke({"messages": [HumanMessage("hi")]}, config)
        return super().put(config, *args)


def test_a_service_writing_the_thread_on_the_target_meanwhile_refuses_the_copy(
        source: InMemorySaver, target_url: str) -> None:
    with Interleaving.from_url(target_url) as target:
        target._started, target.url = False, target_url  # type: ignore[attr-defined]
        report = copy_threads(source, target)
        [refused] = report.refused
        assert refused.thread_id == "agent" and refused.refused is not None
        assert refused.refused.startswith("CheckpointConflict: thread 'agent'")
        assert len(report.threads) == len(THREADS)


class AsyncInterleaving(AsyncLedgerSaver):
    """Interleaving, on the async saver."""

    started = False
    url = ""

    async def aput(self, config: Any, *args: Any) -> Any:
        if config["configurable"]["thread_id"] == "agent" and not self.started:
            self.started = True
            async with AsyncLedgerSaver.from_url(self.url) as other:
                await agent_graph(other).ainvoke({"messages": [HumanMessage("hi")]}, config)
        return await super().aput(config, *args)


def test_the_async_copy_reports_a_refused_thread_too(source: InMemorySaver,
                                                     target_url: str) -> None:
    async def main() -> CopyReport:
        async with AsyncInterleaving.from_url(target_url) as target:
            target.url = target_url
            return await acopy_threads(source, target, thread_ids=["agent", "long"])

    report = asyncio.run(main())
    assert [t.thread_id for t in report.refused] == ["agent"]
    assert [t.thread_id for t in report.threads] == ["agent", "long"]


@KINDS
def test_a_dry_run_counts_and_stores_nothing(source: InMemorySaver, target_url: str,
                                             kind: str) -> None:
    dry = _copy(kind, source, target_url, dry_run=True)
    with LedgerSaver.from_url(target_url) as target:
        assert list(target.list(None)) == []
    real = _copy(kind, source, target_url)
    assert (dry.checkpoints, dry.writes) == (real.checkpoints, real.writes)
    assert dry.summary().splitlines()[1].startswith("would copy ")
    again = _copy(kind, source, target_url, dry_run=True)
    assert (again.checkpoints, again.writes, again.present) == (0, 0, real.checkpoints)


@KINDS
def test_a_source_that_cannot_list_its_threads_asks_for_them(
        target_url: str, request: pytest.FixtureRequest, kind: str) -> None:
    source = _dynamodb(request.getfixturevalue("dynamodb_server").endpoint_url)
    with pytest.raises(ThreadsNotListed, match=r"DynamoDBSaver could not list its threads "
                                               r"\(ValueError: .*\): name them with thread_ids"):
        _copy(kind, source, target_url)


def _damaged_sqlite_source(path: Path) -> SqliteSaver:
    """Threads a, b and c on a SqliteSaver, one checkpoint of b's not loading."""
    saver = SqliteSaver(sqlite3.connect(path, check_same_thread=False))
    for thread in ("a", "b", "c"):
        saver.put({"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
                  {**empty_checkpoint(), "id": f"1ef-{thread}"},
                  {"source": "input", "step": -1}, {})
    saver.conn.execute("UPDATE checkpoints SET checkpoint = X'c1' WHERE thread_id = 'b'")
    saver.conn.commit()
    return saver


def test_a_thread_the_source_cannot_read_is_reported_and_the_others_copied(
        tmp_path: Path, target_url: str) -> None:
    source = _damaged_sqlite_source(tmp_path / "source.db")  # sync only, as SqliteSaver is
    report = _copy("sync", source, target_url, thread_ids=["a", "b", "c"])
    assert [(t.thread_id, t.checkpoints) for t in report.threads] == [("a", 1), ("b", 0),
                                                                      ("c", 1)]
    [refused] = report.refused
    assert refused.thread_id == "b" and refused.refused is not None
    assert refused.refused.startswith("the source cannot read it (") and \
        refused.refused.endswith("nothing of it copied")
    with LedgerSaver.from_url(target_url) as target:
        differences = compare_threads(source, target, thread_ids=["a", "b", "c"])
    assert [(d.thread_id, d.what.split(" (")[0]) for d in differences] == [
        ("b", "the source cannot read it")]
    with pytest.raises(ThreadsNotListed, match=r"SqliteSaver could not list its threads"):
        _copy("sync", source, target_url)
    with pytest.raises(NotImplementedError):  # a sync-only saver under acopy_threads
        _copy("async", source, target_url, thread_ids=["a"])


@KINDS
def test_a_thread_the_source_does_not_hold_is_not_copied(source: InMemorySaver,
                                                          target_url: str, kind: str) -> None:
    report = _copy(kind, source, target_url, thread_ids=["no-such-thread"])
    assert [t.refused for t in report.refused] == ["the source holds no checkpoint of it"]


def _put_at(saver: InMemorySaver, thread: str, ns: str) -> None:
    saver.put({"configurable": {"thread_id": thread, "checkpoint_ns": ns}},
              {**empty_checkpoint(), "id": f"1ef-{len(ns)}"}, {"source": "input", "step": -1},
              {})


@KINDS
def test_a_thread_whose_ids_the_target_cannot_hold_is_reported_and_nothing_of_it_copied(
        target_url: str, kind: str) -> None:
    # A thread id long enough to fit alone, too long with its subgraph's namespace: the
    # copy once stored the root namespace, then stopped the whole run at the subgraph.
    source, long = InMemorySaver(), "t" * 990
    for thread in ("a-first", long, "has\x00nul", "bad-task", "z-last"):
        _put_at(source, thread, "")
    _put_at(source, long, "child:" + "c" * 40)
    _put_at(source, "bad-task", "child:x")  # a subgraph's write by a task it cannot name
    source.put_writes({"configurable": {"thread_id": "bad-task", "checkpoint_ns": "child:x",
                                        "checkpoint_id": "1ef-7"}}, [("c", 1)], "task\x00id")
    chosen = ["a-first", long, "has\x00nul", "bad-task", "z-last"]
    report = _copy(kind, source, target_url, thread_ids=chosen)
    assert [(t.thread_id, t.checkpoints) for t in report.threads] == [
        ("a-first", 1), (long, 0), ("has\x00nul", 0), ("bad-task", 0), ("z-last", 1)]
    assert [t.refused for t in report.refused] == [
        "the target cannot hold its ids: thread_id and checkpoint_ns are too long together: "
        "1,044 bytes of UTF-8 with the saver's prefix, over 1,024; nothing of it copied",
        "the target cannot hold its ids: thread_id 'has\\x00nul' contains a NUL character; "
        "nothing of it copied",
        "the target cannot hold its ids: task_id 'task\\x00id' contains a NUL character; "
        "nothing of it copied"]
    with LedgerSaver.from_url(target_url) as target:
        assert _ids(target, long) == []
    differences = _compare(kind, source, target_url, thread_ids=chosen)
    assert [(d.thread_id, d.what.endswith("; not on the target")) for d in differences] == [
        (long, True), ("has\x00nul", True), ("bad-task", True)]


@KINDS
def test_threads_keep_their_user_so_forgetting_the_user_erases_the_copy(
        target_url: str, kind: str) -> None:
    source = InMemorySaver()
    mine = {"configurable": {"thread_id": "t-ada", "user_id": "ada"}}
    agent_graph(source).invoke({"messages": [HumanMessage("my name is Ada")]}, mine)
    agent_graph(source).invoke({"messages": [HumanMessage("hello")]}, config("t-anon"))
    assert _copy(kind, source, target_url).ok
    assert _compare(kind, source, target_url) == []
    with open_store(target_url) as store:
        store.forget_user("ada")
    with LedgerSaver.from_url(target_url) as target:
        assert _ids(target, "t-ada") == [] and _ids(target, "t-anon")


@KINDS
def test_a_checkpoint_whose_parent_the_source_lost_keeps_every_value(target_url: str,
                                                                      kind: str) -> None:
    source = InMemorySaver()
    for text in ("one", "two"):
        agent_graph(source).invoke({"messages": [HumanMessage(text)]}, config("pruned"))
    oldest = _ids(source, "pruned")[-1]
    del source.storage["pruned"][""][oldest]  # pruned on the source: a dangling parent
    assert _copy(kind, source, target_url).ok
    assert _compare(kind, source, target_url) == []
    with LedgerSaver.from_url(target_url) as target:
        assert texts(agent_graph(target).get_state(config("pruned")).values) == [
            "one", "Noted: one", "two", "Noted: two"]


def test_the_async_twin_copies_and_compares_with_progress(source: InMemorySaver,
                                                          target_url: str) -> None:
    seen: list[tuple[int, int]] = []

    async def main() -> tuple[CopyReport, list[ThreadDifference]]:
        async with AsyncLedgerSaver.from_url(target_url) as target:
            report = await acopy_threads(source, target, on_progress=lambda *p: seen.append(p))
            return report, await acompare_threads(source, target, on_progress=lambda *p: None)

    report, differences = asyncio.run(main())
    assert report.ok and differences == []
    assert seen == [(done, len(THREADS)) for done in range(len(THREADS) + 1)]
    with LedgerSaver.from_url(target_url) as target:
        for thread, graph in THREADS.items():
            assert list(graph(target).get_state_history(config(thread))) == list(
                graph(source).get_state_history(config(thread)))


def test_a_thread_copied_from_an_integer_counting_saver_goes_on_counting_so() -> None:
    with LedgerSaver.from_url("memory://") as saver:
        assert saver.get_next_version(7, None) == 8  # type: ignore[arg-type]
        assert saver.get_next_version(None, None).startswith("0" * 31 + "1.")

    async def on_the_async_saver() -> Any:
        async with AsyncLedgerSaver.from_url("memory://") as saver:
            return saver.get_next_version(41, None)  # type: ignore[arg-type]

    assert asyncio.run(on_the_async_saver()) == 42


# -- the rules, with no I/O ---------------------------------------------------

def _outline(checkpoint_id: str, parent: str | None, ns: str = "", **versions: int) -> Outline:
    return Outline(ns, checkpoint_id, parent, dict(versions), frozenset(versions), ())


def test_a_child_listed_before_its_parent_waits_for_it() -> None:
    items = [_outline("b", "z"), _outline("c", "b"), _outline("z", None), _outline("y", "q")]
    assert [o.checkpoint_id for o in copy_order(items)] == ["y", "z", "b", "c"]


def test_a_put_stores_the_channels_that_changed_or_all_without_a_parent() -> None:
    parent, child = _outline("a", None, x=1, y=1), _outline("b", "a", x=1, y=2, z=1)
    assert new_versions(child, parent) == {"y": 2, "z": 1}
    assert new_versions(child, None) == {"x": 1, "y": 2, "z": 1}
    emptied = Outline("", "c", "b", {"x": 1, "y": 2, "z": 1}, frozenset({"y", "z"}), ())
    assert new_versions(emptied, child) == {"x": 1}  # same version, value gone


def test_a_put_is_marked_as_time_travel_only_when_it_forks() -> None:
    child = _outline("b", "a")
    assert "metadata" not in put_config("t", child, "a", None)
    assert put_config("t", child, "x", ("user_id", "ada")) == {
        "configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": "a",
                         "user_id": "ada"},
        "metadata": {"checkpoint_id": "a"}}
    second_root = _outline("c", None)
    assert put_config("t", second_root, "b", None)["metadata"] == {"checkpoint_id": "c"}


def test_writes_are_compared_per_task_the_special_ones_by_their_index() -> None:
    one = [("t1", "__interrupt__", 1), ("t1", "__resume__", 2), ("t2", "a", 3), ("t1", "b", 4)]
    other = [("t2", "a", 3), ("t1", "__resume__", 2), ("t1", "__interrupt__", 1), ("t1", "b", 4)]
    assert writes_by_task(one) == writes_by_task(other) == {
        "t1": [("__resume__", 2), ("__interrupt__", 1), ("b", 4)], "t2": [("a", 3)]}


def test_outlines_tell_missing_extra_and_reordered_checkpoints() -> None:
    a, b, c = _outline("a", None), _outline("b", "a"), _outline("c", "b", ns="sub:1")
    theirs = {o.address: o for o in (b, a, c)}
    assert outline_differences("t", theirs, {o.address: o for o in (a, b)}) == [
        ThreadDifference("t", "", None, "listed in another order"),
        ThreadDifference("t", "sub:1", "c", "missing on the target")]
    assert str(ThreadDifference("t", "sub:1", "c", "its state differs")) == (
        "thread 't' namespace 'sub:1' checkpoint c: its state differs")
    assert str(ThreadDifference("t", "", None, "listed in another order")) == (
        "thread 't': listed in another order")


def test_an_outline_keeps_the_user_the_metadata_names() -> None:
    found = CheckpointTuple({"configurable": {"thread_id": "t", "checkpoint_id": "a"}},
                            empty_checkpoint(), {"user_id": "ada", "step": 1}, None, [])
    assert outline(found, "user_id").user == "ada" and outline(found).user is None
    report = CopyReport(False, [ThreadCopy("t", refused="why")])
    assert "1 thread not copied:\n  t: why" in report.summary()


def test_the_async_twin_reads_an_async_saver(tmp_path: Path, target_url: str) -> None:
    """From the file a SqliteSaver wrote, read through AsyncSqliteSaver's alist/aget_tuple."""
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    with SqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as written:
        write_threads(written, long_turns=2)

    async def main() -> tuple[CopyReport, list[ThreadDifference]]:
        async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as source, \
                AsyncLedgerSaver.from_url(target_url) as target:
            report = await acopy_threads(source, target)
            return report, await acompare_threads(source, target)

    report, differences = asyncio.run(main())
    assert report.ok and len(report.threads) == len(THREADS) and differences == []


KILLED_COPY = """
import os, signal, sys
from langgraph.checkpoint.sqlite import SqliteSaver
from chatledger.langgraph import LedgerSaver, copy_threads

class KilledAt(LedgerSaver):
    puts = int(sys.argv[3])

    def put_writes(self, *args):
        if self.puts == 0:
            os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no exception: a kill
        super().put_writes(*args)

    def put(self, *args):
        self.puts -= 1
        return super().put(*args)

with SqliteSaver.from_conn_string(sys.argv[1]) as source, KilledAt.from_url(sys.argv[2]) as target:
    copy_threads(source, target)
"""


def test_a_copy_killed_by_sigkill_is_finished_by_running_it_again(tmp_path: Path,
                                                                   target_url: str) -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = str(tmp_path / "lg.db")
    with SqliteSaver.from_conn_string(path) as written:
        write_threads(written, long_turns=2)
    # The child imports the chatledger under test, wherever it is.
    src = str(Path(chatledger.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", KILLED_COPY, path, target_url, "12"],
                          capture_output=True, text=True, timeout=120, check=False, env=env)
    assert done.returncode == -signal.SIGKILL, done.stderr
    with SqliteSaver.from_conn_string(path) as source, \
            LedgerSaver.from_url(target_url) as target:
        report = copy_threads(source, target)
        assert report.ok and report.present == 12
        assert compare_threads(source, target) == []


class Scored(TypedDict):
    score: float
    reply: AIMessage


@KINDS
def test_a_state_holding_nan_compares_the_same_as_its_copy(kind: str,
                                                           target_url: str) -> None:
    """``nan != nan``: compared with ``==``, an exact copy holding one read as different."""
    builder = StateGraph(Scored)
    builder.add_node("score", lambda state: {
        "score": float("nan"), "reply": AIMessage("x", additional_kwargs={"p": float("nan")})})
    builder.add_edge(START, "score")
    source = InMemorySaver()
    builder.compile(checkpointer=source).invoke(
        {"score": 0.0, "reply": AIMessage("")}, {"configurable": {"thread_id": "nan"}})

    assert _copy(kind, source, target_url).checkpoints == 3
    assert _compare(kind, source, target_url) == []
    builder.compile(checkpointer=source).invoke(
        {"score": 1.0, "reply": AIMessage("")}, {"configurable": {"thread_id": "nan"}})
    assert _compare(kind, source, target_url)  # a checkpoint more: still told apart


def test_same_is_equality_where_a_nan_is_a_nan() -> None:
    import dataclasses

    from chatledger.langgraph._copying import same

    @dataclasses.dataclass
    class Score:
        value: float

    nan = float("nan")
    assert same({"a": [nan, (1, nan)]}, {"a": [float("nan"), (1, float("nan"))]})
    assert same(Score(nan), Score(float("nan")))
    assert same(AIMessage("x", additional_kwargs={"p": nan}),
                AIMessage("x", additional_kwargs={"p": float("nan")}))
    assert not same(Score(nan), Score(1.0)) and not same([nan], (nan,))
    assert not same({"a": nan}, {"b": nan}) and not same([nan], [nan, nan])
    assert not same(nan, 1.0) and not same(object(), object())


def _extended(state: list[str] | None, writes: list[list[str]]) -> list[str]:
    return [*(state or []), *(item for write in writes for item in write)]


class _Steps(TypedDict):
    log: Annotated[list[str], DeltaChannel(_extended, snapshot_frequency=1000)]


_FAILING = {"b": True}


def _parallel_graph(checkpointer: Any) -> Any:
    """start, then a, b and c in one step (b failing while told to), then end."""
    def step(name: str) -> Any:
        def run(state: _Steps) -> dict[str, list[str]]:
            if _FAILING.get(name):
                raise RuntimeError(f"{name} fails")
            return {"log": [name]}
        return run

    builder = StateGraph(_Steps)
    builder.add_node("start", step("start"))
    for name in "abc":
        builder.add_node(name, step(name))
        builder.add_edge("start", name)
    builder.add_node("end", step("end"))
    builder.add_edge(START, "start")
    builder.add_edge(["a", "b", "c"], "end")
    return builder.compile(checkpointer=checkpointer)


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_a_thread_copied_mid_step_resumes_with_the_sources_order_of_writes(
        kind: str, request: pytest.FixtureRequest, tmp_path: Path, target_url: str) -> None:
    """The source's task paths are kept: b, rerun after the copy, sorts between the
    copied a and c, as on the source; a DeltaChannel replays one step's writes in that
    order, so a fresh saver reads the state as the source does."""
    thread = {"configurable": {"thread_id": "steps"}}
    with source_saver(kind, request, tmp_path) as source:
        _FAILING["b"] = True
        with pytest.raises(RuntimeError, match="b fails"):
            _parallel_graph(source).invoke({"log": ["in"]}, thread)
        with LedgerSaver.from_url(target_url) as target:
            assert not copy_threads(source, target).refused
            _FAILING["b"] = False
            _parallel_graph(target).invoke(None, thread)
        with LedgerSaver.from_url(target_url) as fresh:
            read = _parallel_graph(fresh).get_state(thread).values["log"]
    assert read == ["in", "start", "a", "b", "c", "end"]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_the_async_copy_keeps_an_async_sources_task_paths(
        kind: str, request: pytest.FixtureRequest, tmp_path: Path, target_url: str) -> None:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    thread = {"configurable": {"thread_id": "steps"}}
    if kind == "postgres":
        with source_saver("postgres", request, tmp_path) as made:  # its database, set up
            url = made.conn.info.dsn
    opened = (AsyncSqliteSaver.from_conn_string(str(tmp_path / "lg.db")) if kind == "sqlite"
              else AsyncPostgresSaver.from_conn_string(url))

    async def scenario() -> list[str]:
        async with opened as source:
            _FAILING["b"] = True
            with pytest.raises(RuntimeError, match="b fails"):
                await _parallel_graph(source).ainvoke({"log": ["in"]}, thread)
            async with AsyncLedgerSaver.from_url(target_url) as target:
                assert not (await acopy_threads(source, target)).refused
                _FAILING["b"] = False
                await _parallel_graph(target).ainvoke(None, thread)
        async with AsyncLedgerSaver.from_url(target_url) as fresh:
            state = await _parallel_graph(fresh).aget_state(thread)
        return list(state.values["log"])

    assert asyncio.run(scenario()) == ["in", "start", "a", "b", "c", "end"]


def test_without_a_path_for_every_task_the_copy_ranks_them() -> None:
    writes = [("t1", "x", 1), ("t2", "x", 2)]
    assert [p for _, p, _ in write_groups(writes, paths={"t1": "~a"})] == ["000000", "000001"]
    assert [p for _, p, _ in write_groups(writes, paths={"t1": "~a", "t2": "~b"})] == ["~a",
                                                                                      "~b"]
