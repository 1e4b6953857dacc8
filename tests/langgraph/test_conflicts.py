"""Two processes run one thread at once: LangGraph's SQLite saver forks silently, ours refuses."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from chatledger.langgraph import LedgerSaver
from tests.langgraph._graphs import agent_graph, texts
from tests.langgraph._workers import race_turn
from tests.spawned import SpawnedWorkers

THREAD = "support-42"
TURNS = ["my name is Ada", "my name is Bob"]


def _race(pair: SpawnedWorkers, kind: str, target: str,
          durability: str = "async") -> dict[str, str]:
    """Both processes read the latest checkpoint before either stores the next one."""
    return dict(pair.run(race_turn, kind, target, THREAD, TURNS, durability, timeout=120))


def _children(tuples: list[Any]) -> dict[str | None, list[str]]:
    children: dict[str | None, list[str]] = {}
    for item in tuples:
        parent = item.parent_config["configurable"]["checkpoint_id"] if item.parent_config \
            else None
        children.setdefault(parent, []).append(item.config["configurable"]["checkpoint_id"])
    return children


def _first_turn(saver: Any) -> dict[str, Any]:
    config = {"configurable": {"thread_id": THREAD}}
    agent_graph(saver).invoke({"messages": [("user", "hello")]}, config)
    return config


@pytest.mark.slow
def test_langgraph_sqlite_saver_forks_the_thread_and_loses_a_turn(
        tmp_path: Path, spawned_pair: SpawnedWorkers) -> None:
    path = str(tmp_path / "langgraph.db")
    with sqlite3.connect(path, check_same_thread=False) as conn:
        _first_turn(SqliteSaver(conn))

    outcome = _race(spawned_pair, "sqlite", path)

    assert outcome == dict.fromkeys(TURNS, "stored")  # nobody was told
    with sqlite3.connect(path, check_same_thread=False) as conn:
        saver = SqliteSaver(conn)
        config = {"configurable": {"thread_id": THREAD}}
        forks = [kids for kids in _children(list(saver.list(config))).values() if len(kids) > 1]
        latest = texts(agent_graph(saver).get_state(config).values)
    assert forks  # one checkpoint has two children
    assert sum(text in latest for text in TURNS) == 1  # one acknowledged turn is unreachable


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "durability"), [
    ("sqlite", "sync"), ("sqlite", "async"), ("sqlite", "exit"), ("redis", "async"),
    ("redis", "exit"), ("postgres", "async"), ("postgres", "exit"),
])
def test_ledger_saver_reports_the_second_writer(
    kind: str, durability: str, tmp_path: Path, request: pytest.FixtureRequest,
    spawned_pair: SpawnedWorkers,
) -> None:
    from tests.langgraph.conftest import backend_url

    url = backend_url(kind, request, tmp_path)
    with LedgerSaver.from_url(url) as saver:
        _first_turn(saver)

    outcome = _race(spawned_pair, "ledger", url, durability)

    assert sorted(outcome.values()) == ["conflict: CheckpointConflict", "stored"]
    winner = next(text for text, result in outcome.items() if result == "stored")
    with LedgerSaver.from_url(url) as saver:
        config = {"configurable": {"thread_id": THREAD}}
        children = _children(list(saver.list(config)))
        latest = texts(agent_graph(saver).get_state(config).values)
    assert all(len(kids) == 1 for kids in children.values())  # one chain, no fork
    assert winner in latest
    assert latest[:2] == ["hello", "Noted: hello"]


@pytest.mark.slow
@pytest.mark.parametrize("durability", ["sync", "async", "exit"])
def test_two_processes_starting_one_new_thread_are_told_apart(
    durability: str, tmp_path: Path, request: pytest.FixtureRequest,
    spawned_pair: SpawnedWorkers,
) -> None:
    """Both see no checkpoint; with ``exit`` each run's only put has no parent."""
    from tests.langgraph.conftest import backend_url

    url = backend_url("sqlite", request, tmp_path)

    outcome = _race(spawned_pair, "ledger", url, durability)

    assert sorted(outcome.values()) == ["conflict: CheckpointConflict", "stored"]
    winner = next(text for text, result in outcome.items() if result == "stored")
    with LedgerSaver.from_url(url) as saver:
        config = {"configurable": {"thread_id": THREAD}}
        children = _children(list(saver.list(config)))
        latest = texts(agent_graph(saver).get_state(config).values)
    assert list(children) == [None] or all(len(kids) == 1 for kids in children.values())
    assert len(children.get(None, [])) == 1  # one root: the loser stored nothing
    assert latest == [winner, f"Noted: {winner}"]
