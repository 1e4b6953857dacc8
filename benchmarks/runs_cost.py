"""What does holding a thread cost per turn: ``ThreadRuns.invoke`` against ``graph.invoke``?

A turn is one ``invoke`` of a chat graph (``MessagesState``, one node that
answers; LangGraph stores three checkpoints a turn). ``ThreadRuns`` adds, per
turn, taking the thread's lease (a read of the newest entries and one append
with ``expect_version``) and releasing it (the same again), and runs the graph
with ``durability="sync"``; the plain turn runs with LangGraph's default
(``"async"``) and, for the fair comparison, with ``"sync"`` too. Each
contender has a thread of its own on the same store; turns alternate between
them, so the load of a shared machine falls on all alike. Stores: SQLite (a
temporary file) and Redis (a private ``redis-server`` the script starts,
``chatledger.testing.RedisServer``). It prints the median and p90 of a turn
and the ratios to the plain turns: a report, with no targets.

Run it from the repository root, after ``pip install -e ".[bench]"``::

    python benchmarks/runs_cost.py            # 200 timed turns each
    python benchmarks/runs_cost.py --quick    # 40 timed turns each
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _report import environment, median_us, p90_us, parse_args, print_header
from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph

from chatledger.langgraph import LedgerSaver, ThreadRuns
from chatledger.testing import RedisServer

WARMUP = 5


def chat_graph(saver: LedgerSaver) -> Any:
    def answer(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"Noted: {state['messages'][-1].content}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    return builder.compile(checkpointer=saver)


def contenders(graph: Any) -> dict[str, Callable[[Any, Any], Any]]:
    runs = ThreadRuns(graph, multitask_strategy="reject")
    return {
        "graph.invoke": graph.invoke,
        "graph.invoke sync": lambda message, config: graph.invoke(
            message, config, durability="sync"),
        "ThreadRuns.invoke": runs.invoke,
    }


def measure(url: str, turns: int) -> dict[str, list[int]]:
    samples: dict[str, list[int]] = {}
    with LedgerSaver.from_url(url) as saver:
        calls = contenders(chat_graph(saver))
        for turn in range(WARMUP + turns):
            for name, call in calls.items():
                message = {"messages": [("user", f"turn {turn}: where is my order?")]}
                config = {"configurable": {"thread_id": name}}
                started = time.perf_counter_ns()
                call(message, config)
                took = time.perf_counter_ns() - started
                if turn >= WARMUP:
                    samples.setdefault(name, []).append(took)
    return samples


def report(store: str, samples: dict[str, list[int]]) -> None:
    plain, plain_sync = samples["graph.invoke"], samples["graph.invoke sync"]
    for name, taken in samples.items():
        ratio = median_us(taken) / median_us(plain)
        ratio_sync = median_us(taken) / median_us(plain_sync)
        print(f"{store:<7} {name:<18} median {median_us(taken):8.0f} us  "
              f"p90 {p90_us(taken):8.0f} us  x{ratio:.2f} of graph.invoke, "
              f"x{ratio_sync:.2f} of graph.invoke sync")


def main(argv: list[str] | None = None) -> int:
    turns, _ = parse_args(argv, __doc__, quick=40, full=200,
                         quick_help="40 timed turns each", check=False)
    print_header("ThreadRuns: the cost of holding a thread per turn",
                 [*environment(), ("turns", f"{turns} timed after {WARMUP} untimed, each")])
    with tempfile.TemporaryDirectory() as tmp:
        report("sqlite", measure(f"sqlite:///{Path(tmp) / 'runs.db'}", turns))
    with RedisServer() as server:
        report("redis", measure(server.url, turns))
    return 0


if __name__ == "__main__":
    sys.exit(main())
