"""What the spawned processes of the tests run."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver

from chatledger import ConflictError
from chatledger.langgraph import LedgerSaver
from tests.langgraph._graphs import agent_graph, texts


class _RacingLedgerSaver(LedgerSaver):
    """Waits, after reading the latest checkpoint, until the other process has too."""

    barrier: Any = None

    def get_tuple(self, config: Any) -> Any:
        found = super().get_tuple(config)
        self.barrier.wait(timeout=60)
        return found


class _RacingSqliteSaver(SqliteSaver):
    barrier: Any = None

    def get_tuple(self, config: Any) -> Any:
        found = super().get_tuple(config)
        self.barrier.wait(timeout=60)
        return found


def race_turn(barrier: Any, worker: int, kind: str, target: str, thread_id: str,
              turns: list[str], durability: str = "async") -> tuple[str, str]:
    """Run this worker's turn of the agent on ``thread_id`` once the other process has
    read it too (a job of ``tests.spawned.SpawnedWorkers``): the turn and its outcome."""
    text = turns[worker]
    saver: Any
    if kind == "ledger":
        saver = _RacingLedgerSaver.from_url(target)
    else:
        saver = _RacingSqliteSaver(sqlite3.connect(target, check_same_thread=False))
    saver.barrier = barrier
    config = {"configurable": {"thread_id": thread_id}}
    try:
        with saver if kind == "ledger" else closing(saver.conn):  # the process lives on
            agent_graph(saver).invoke({"messages": [("user", text)]}, config,
                                      durability=durability)
        return text, "stored"
    except ConflictError as exc:
        return text, f"conflict: {type(exc).__name__}"


def converse(url: str, thread_id: str, text: str) -> list[str]:
    """One turn in a process that starts with nothing in memory."""
    with LedgerSaver.from_url(url) as saver:
        state = agent_graph(saver).invoke({"messages": [("user", text)]},
                                          {"configurable": {"thread_id": thread_id}})
        return texts(state)
