"""Graphs that count their model and tool calls in a file, and the spawned
processes that double-text one thread through ThreadRuns.

Importable by spawned worker processes: everything here is module level.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import MessagesState

from chatledger.langgraph import LedgerSaver, ThreadBusy, ThreadRuns
from chatledger.langgraph._runs import RunToken
from chatledger.langgraph._sync.lease import ThreadLease
from tests.langgraph._graphs import ScriptedModel, agent_loop


def _log(path: str, line: str) -> None:
    # One write() of one short line with O_APPEND: lines of processes never mix.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def calls(path: str | Path) -> list[str]:
    """The calls a counting graph logged, in order."""
    try:
        return Path(path).read_text().splitlines()
    except FileNotFoundError:
        return []


def counting_graph(checkpointer: BaseCheckpointSaver[Any], log: str,
                   pause: Any = None) -> Any:
    """The tool-calling agent of ``_graphs.py``, logging each model call as
    ``model <last message>`` and each tool call as ``tool <order>``. ``pause``,
    if given, is called in the model node before the model (the place a test
    makes something happen while a run is under way)."""

    @tool
    def lookup_order(order: int) -> str:
        """Look up an order's status."""
        _log(log, f"tool {order}")
        return f"order {order} has shipped"

    model = ScriptedModel()

    def agent(state: MessagesState) -> dict[str, Any]:
        messages: Sequence[BaseMessage] = state["messages"]
        if pause is not None:
            pause()
        _log(log, f"model {messages[-1].content}")
        answer: AIMessage = model.invoke(list(messages))
        return {"messages": [answer]}

    return agent_loop(agent, [lookup_order], checkpointer)


def double_text(start: Any, worker: int, url: str, thread_id: str, strategy: str,
                turns: int, log: str) -> list[tuple[str, str]]:
    """Send ``turns`` messages on one thread, as fast as they are answered (a
    job of ``tests.spawned.SpawnedWorkers``): each message and its outcome."""
    outcomes: list[tuple[str, str]] = []
    config = {"configurable": {"thread_id": thread_id}}
    with LedgerSaver.from_url(url) as saver:
        runs = ThreadRuns(counting_graph(saver, log), multitask_strategy=strategy,
                          lease=60, wait=120)
        start.wait()
        for turn in range(turns):
            text = f"order {worker * 100 + turn}"
            try:
                runs.invoke({"messages": [("user", text)]}, config)
                outcomes.append((text, "stored"))
            except ThreadBusy:
                outcomes.append((text, "busy"))
    return outcomes


def take_and_die(start: Any, worker: int, url: str, thread_id: str,
                 lease: float) -> str:
    """Take the thread's lease and never renew or release it, as a process that
    died would (a job of ``tests.spawned.SpawnedWorkers``): ``taken`` or ``busy``."""
    with LedgerSaver.from_url(url) as saver:
        start.wait()
        taken = ThreadLease(saver._ledger(thread_id, ""), f"dead-{worker}").take(lease)
    return "taken" if isinstance(taken, RunToken) else "busy"
