"""``known_checkpoint_id``: a thread that lost what the application knew raises, never starts over.

Every backend, the sync saver and the async one, every durability mode (as
``saver_matrix`` draws them: tests/langgraph/conftest.py): the thread lost whole
(deleted behind the saver's back, FLUSHALL, SQLite rows deleted), rolled back
past the known checkpoint (an older copy restored), expired; and the healthy
cases (the known checkpoint is the latest, or an ancestor of it because another
process ran a turn meanwhile), which run as usual.
"""

from __future__ import annotations

import asyncio
import pickle
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langgraph.graph import START, MessagesState, StateGraph

from chatledger import MemoryLostError, RetryPolicy, open_store
from chatledger._sync import store as sync_store
from chatledger.langgraph import (
    AsyncLedgerSaver,
    CheckpointLost,
    LedgerSaver,
    alatest_checkpoint_id,
    latest_checkpoint_id,
    thread_config,
)
from chatledger.langgraph._layout import index_session_id
from chatledger.testing import RedisServer
from tests.conftest import FakeClock
from tests.langgraph._blocking import BlockingSaver
from tests.langgraph._graphs import agent_graph, texts
from tests.langgraph._runs import latest, run
from tests.langgraph.conftest import backend_url, saver_matrix

THREAD = "customer-42"
DURABILITIES = ("sync", "async", "exit")


@pytest.fixture
def any_url(where: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(where, request, tmp_path)


def _open(kind: str, url: str, **options: Any) -> Any:
    opener: Any = LedgerSaver if kind == "sync" else BlockingSaver
    return opener.from_url(url, retry=RetryPolicy.none(), **options)


def _turn(saver: Any, text: str, known: str | None, durability: str = "async") -> str | None:
    """One turn of a web service that keeps the id beside its conversation row."""
    config = thread_config(THREAD, known)
    run(saver, "invoke", {"messages": [("user", text)]}, config, durability=durability)
    return latest(saver, config)


def _two_turns(saver: Any, durability: str = "async") -> str | None:
    known = _turn(saver, "my name is Ada", None, durability)
    return _turn(saver, "order 7", known, durability)


def _lost(saver: Any, known: str | None, durability: str = "async") -> CheckpointLost:
    with pytest.raises(CheckpointLost) as caught:
        _turn(saver, "what is my name?", known, durability)
    return caught.value


def _unknown_state(saver: Any) -> list[str]:
    """The thread's messages, read without stating what is known."""
    values = run(saver, "get_state", {"configurable": {"thread_id": THREAD}}).values
    return texts(values) if values else []


@pytest.mark.parametrize(("where", "kind", "durability"), saver_matrix(DURABILITIES))
def test_a_thread_deleted_behind_the_savers_back_is_loud(any_url: str, kind: str,
                                                         durability: str) -> None:
    with _open(kind, any_url) as saver:
        known = _two_turns(saver, durability)
        with open_store(any_url) as other:  # another process deletes the thread's keys
            assert other.purge(prefix=index_session_id(THREAD)) > 0

        lost = _lost(saver, known, durability)

        assert isinstance(lost, MemoryLostError)
        assert (lost.thread_id, lost.checkpoint_ns) == (THREAD, "")
        assert (lost.expected_checkpoint, lost.found_checkpoint) == (known, None)
        assert _unknown_state(saver) == []  # nothing ran: no question stored, no model call


@pytest.mark.parametrize(("where", "kind", "durability"), saver_matrix(DURABILITIES))
def test_a_thread_rolled_back_past_the_known_checkpoint_is_loud(any_url: str, kind: str,
                                                                durability: str) -> None:
    """An older copy restored (a failover to a stale replica): the thread has a
    latest checkpoint, older than the one the application knew."""
    with _open(kind, any_url) as saver:
        first = _turn(saver, "my name is Ada", None, durability)
        saver.copy_thread(THREAD, "backup")  # the stale copy, made after the first turn
        known = _turn(saver, "order 7", first, durability)
        saver.delete_thread(THREAD)
        saver.copy_thread("backup", THREAD)

        lost = _lost(saver, known, durability)

        assert (lost.expected_checkpoint, lost.found_checkpoint) == (known, first)
        assert _unknown_state(saver) == ["my name is Ada", "Noted: my name is Ada"]


@pytest.mark.parametrize(("where", "kind", "durability"), saver_matrix(DURABILITIES))
def test_a_healthy_thread_runs_as_usual(any_url: str, kind: str, durability: str) -> None:
    with _open(kind, any_url) as saver:
        known = _two_turns(saver, durability)

        after = _turn(saver, "what is my name?", known, durability)

        assert after is not None and after != known
        assert _unknown_state(saver)[-1] == "Your name is Ada."


@pytest.mark.parametrize(("where", "kind"), saver_matrix())
def test_another_process_running_a_turn_meanwhile_is_no_loss(any_url: str, kind: str) -> None:
    """The known checkpoint is then an ancestor of the latest, a few turns back."""
    with _open(kind, any_url) as saver, _open(kind, any_url) as other_pod:
        known = _two_turns(saver)
        for text in ["order 8", "order 9", "my name is Bob"]:
            run(other_pod, "invoke", {"messages": [("user", text)]},
                 {"configurable": {"thread_id": THREAD}})

        after = _turn(saver, "what is my name?", known)

        assert after != known
        assert _unknown_state(saver)[-1] == "Your name is Bob."


def test_the_known_checkpoint_far_back_is_found(tmp_path: Path) -> None:
    """Past the first page of the walk: the check walks on until it meets it."""
    with LedgerSaver.from_url(f"sqlite:///{tmp_path}/l.db") as saver:
        known = _turn(saver, "my name is Ada", None)
        for turn in range(12):
            agent_graph(saver).invoke({"messages": [("user", f"order {turn}")]},
                                      {"configurable": {"thread_id": THREAD}})

        assert _turn(saver, "what is my name?", known) is not None


@pytest.mark.parametrize(("where", "kind"), saver_matrix())
def test_without_the_key_a_lost_thread_starts_over_as_in_langgraph(any_url: str,
                                                                   kind: str) -> None:
    with _open(kind, any_url) as saver:
        _two_turns(saver)
        saver.delete_thread(THREAD)

        assert _turn(saver, "what is my name?", None) is not None

        assert _unknown_state(saver) == ["what is my name?", "I don't know."]


@pytest.mark.parametrize(("where", "kind"), [  # where the store's clock expires threads
    case for case in saver_matrix() if case.values[0] not in ("redis", "sentinel", "cluster")])
def test_an_expired_thread_is_loud(where: str, kind: str, request: pytest.FixtureRequest,
                                   tmp_path: Path, clock: FakeClock) -> None:
    with _open(kind, backend_url(where, request, tmp_path), ttl=100.0, clock=clock) as saver:
        known = _two_turns(saver)
        clock.advance(101)

        lost = _lost(saver, known)

        assert (lost.expected_checkpoint, lost.found_checkpoint) == (known, None)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_thread_expired_and_started_over_by_another_pod_is_loud(
        kind: str, tmp_path: Path, clock: FakeClock) -> None:
    """The store still holds the old checkpoints (its expiry comes later than the
    saver's); the new run started the thread over on top of them."""
    url = f"sqlite:///{tmp_path}/l.db"
    with _open(kind, url, ttl=100.0, clock=clock) as saver, \
            _open(kind, url, ttl=100.0, clock=clock) as other_pod:
        known = _turn(saver, "my name is Ada", None)  # the thread was swept at 0
        clock.advance(20)
        known = _turn(saver, "order 7", known)  # no sweep: it lives until 100
        clock.advance(90)
        restarted = _turn(other_pod, "hello", None)

        lost = _lost(saver, known)

    assert (lost.expected_checkpoint, lost.found_checkpoint) == (known, restarted)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_addressed_checkpoint_not_found_on_a_healthy_thread_is_none(kind: str,
                                                                      tmp_path: Path) -> None:
    with _open(kind, f"sqlite:///{tmp_path}/l.db") as saver:
        known = _two_turns(saver)
        config = thread_config(THREAD, known)
        config["configurable"]["checkpoint_id"] = "no-such-checkpoint"

        assert saver.get_tuple(config) is None


def test_a_private_redis_flushed_is_loud(private_redis: RedisServer) -> None:
    with LedgerSaver.from_url(private_redis.url) as saver:
        known = _two_turns(saver)
        private_redis.command("FLUSHALL")

        lost = _lost(saver, known)

    assert lost.found_checkpoint is None
    assert THREAD in str(lost) and str(known) in str(lost)


def test_sqlite_rows_deleted_are_loud(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    with LedgerSaver.from_url(f"sqlite:///{path}") as saver:
        known = _two_turns(saver)
        with sqlite3.connect(path) as conn:
            tables = [row[0] for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:
                conn.execute(f'DELETE FROM "{table}"')

        assert _lost(saver, known).found_checkpoint is None


def test_an_older_sqlite_file_restored_is_loud(tmp_path: Path) -> None:
    path, stale = tmp_path / "ledger.db", tmp_path / "stale.db"
    with LedgerSaver.from_url(f"sqlite:///{path}") as saver:
        first = _turn(saver, "my name is Ada", None)
    shutil.copy(path, stale)
    with LedgerSaver.from_url(f"sqlite:///{path}") as saver:
        known = _turn(saver, "order 7", first)
    shutil.copy(stale, path)  # the failover: the stale copy comes back

    with LedgerSaver.from_url(f"sqlite:///{path}") as saver:
        lost = _lost(saver, known)

    assert (lost.expected_checkpoint, lost.found_checkpoint) == (known, first)


def test_a_thread_pruned_to_its_latest_keeps_it(tmp_path: Path) -> None:
    with LedgerSaver.from_url(f"sqlite:///{tmp_path}/l.db") as saver:
        known = _two_turns(saver)
        saver.prune([THREAD])

        assert _turn(saver, "what is my name?", known) is not None


def test_the_latest_checkpoint_known_costs_no_read(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    real = sync_store.Session.read

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        reads.append(self.id)
        return real(self, *args, **kwargs)

    with LedgerSaver.from_url(f"sqlite:///{tmp_path}/l.db") as saver:
        known = _two_turns(saver)
        monkeypatch.setattr(sync_store.Session, "read", counted)
        saver.get_tuple({"configurable": {"thread_id": THREAD}})
        unchecked = len(reads)
        reads.clear()
        saver.get_tuple(thread_config(THREAD, known))

    assert len(reads) == unchecked


def test_subgraph_namespaces_are_not_checked(tmp_path: Path) -> None:
    """A subgraph's reads carry the application's config; its ids are not the known one."""

    def answer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [("ai", f"seen {len(state['messages'])}")]}

    inner = StateGraph(MessagesState)
    inner.add_node("answer", answer)
    inner.add_edge(START, "answer")
    outer = StateGraph(MessagesState)
    outer.add_node("inner", inner.compile())
    outer.add_edge(START, "inner")
    with LedgerSaver.from_url(f"sqlite:///{tmp_path}/l.db") as saver:
        graph = outer.compile(checkpointer=saver)
        known = None
        for text in ["one", "two", "three"]:
            config = thread_config(THREAD, known)
            graph.invoke({"messages": [("user", text)]}, config)
            known = latest_checkpoint_id(graph, config)

        assert texts(graph.get_state(thread_config(THREAD, known)).values)[-1] == "seen 5"


def test_the_async_helpers(tmp_path: Path) -> None:
    async def main() -> tuple[str | None, str | None]:
        async with AsyncLedgerSaver.from_url(f"sqlite:///{tmp_path}/l.db") as saver:
            graph = agent_graph(saver)
            config = thread_config(THREAD, None, user_id="u-1")
            await graph.ainvoke({"messages": [("user", "hi")]}, config)
            known = await alatest_checkpoint_id(graph, config)
            await saver.adelete_thread(THREAD)
            with pytest.raises(CheckpointLost):
                await graph.ainvoke({"messages": [("user", "hi")]},
                                    thread_config(THREAD, known))
            return known, await alatest_checkpoint_id(graph, {"configurable": {
                "thread_id": THREAD}})

    known, now = asyncio.run(main())
    assert known is not None and now is None


def test_thread_config_states_only_what_is_known() -> None:
    assert thread_config("t") == {"configurable": {"thread_id": "t"}}
    assert thread_config("t", "c-1", user_id="u") == {"configurable": {
        "thread_id": "t", "known_checkpoint_id": "c-1", "user_id": "u"}}


def test_checkpoint_lost_pickles_as_itself(tmp_path: Path) -> None:
    with LedgerSaver.from_url(f"sqlite:///{tmp_path}/l.db") as saver:
        known = _two_turns(saver)
        saver.delete_thread(THREAD)
        lost = _lost(saver, known)

    again = pickle.loads(pickle.dumps(lost))
    assert type(again) is CheckpointLost and str(again) == str(lost)
    assert (again.thread_id, again.expected_checkpoint) == (THREAD, known)
