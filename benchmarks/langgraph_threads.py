"""How many LangGraph turns per second with many threads at once, on PostgreSQL?

``THREADS`` chat threads (the chat graph of ``langgraph_steps.py``: one
200-character exchange per turn) each run ``TURNS`` turns one after the other,
all threads at once on one event loop, against one private PostgreSQL cluster
the script starts (``_postgres.py``: PostgreSQL's defaults, ``fsync`` on), for
two checkpointers with the same number of connections (``CONNECTIONS``):

- ``AsyncPostgresSaver`` on an ``AsyncConnectionPool`` (as LangGraph documents
  it for concurrent use: autocommit, ``prepare_threshold=0``, dict rows);
- ``AsyncLedgerSaver`` on ``postgresql://`` in the same cluster (its own schema).

The two run interleaved, one timed run each per round, the order alternating,
every run on new threads; the report gives each one's turns per second (the
median over the rounds) and the ratio, against the target: AsyncLedgerSaver
at least AsyncPostgresSaver's throughput. A report, not a test: it exits 0
(``--check``: 1 when the target is missed).

    python benchmarks/langgraph_threads.py            # 5 rounds of 50 threads x 20 turns
    python benchmarks/langgraph_threads.py --quick    # 3 rounds of 50 threads x 5 turns
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from _postgres import postgres_missing, private_postgres
from _report import environment, parse_args, print_header
from langchain_core.messages import AIMessage
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import START, MessagesState, StateGraph
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from chatledger.langgraph import AsyncLedgerSaver

THREADS = 50
CONNECTIONS = 20  # chatledger's default max_connections; the same pool for PostgresSaver
USER_TEXT = "u" * 100
REPLY_TEXT = "a" * 100
OURS, THEIRS = "AsyncLedgerSaver postgresql://", "AsyncPostgresSaver"


def chat_graph(saver: Any) -> Any:
    async def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(REPLY_TEXT)]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    return builder.compile(checkpointer=saver)


async def turns_per_second(graph: Any, turns: int) -> float:
    """Every thread's turns, all threads at once; turns per second of wall time."""
    prefix = uuid.uuid4().hex[:8]

    async def thread(number: int) -> None:
        config = {"configurable": {"thread_id": f"{prefix}-{number}"}}
        for _ in range(turns):
            await graph.ainvoke({"messages": [("user", USER_TEXT)]}, config)

    started = time.perf_counter()
    await asyncio.gather(*(thread(n) for n in range(THREADS)))
    return THREADS * turns / (time.perf_counter() - started)


async def measure(url: str, rounds: int, turns: int) -> dict[str, list[float]]:
    pool = AsyncConnectionPool(url, min_size=CONNECTIONS, max_size=CONNECTIONS, open=False,
                               kwargs={"autocommit": True, "prepare_threshold": 0,
                                       "row_factory": dict_row})
    await pool.open(wait=True)
    theirs = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
    await theirs.setup()
    async with AsyncLedgerSaver.from_url(
            f"{url}?migrate=true&max_connections={CONNECTIONS}", namespace="bench",
            timeout=30.0) as ours:  # as long as the pool of PostgresSaver waits
        graphs = {OURS: chat_graph(ours), THEIRS: chat_graph(theirs)}
        runs: dict[str, Callable[[], Awaitable[float]]] = {
            name: (lambda g=graph: turns_per_second(g, turns)) for name, graph in graphs.items()}
        for run in runs.values():  # warm up: connections, prepared statements, imports
            await run()
        rates: dict[str, list[float]] = {name: [] for name in runs}
        for round_ in range(rounds):
            order = list(runs) if round_ % 2 == 0 else list(reversed(runs))
            for name in order:
                rates[name].append(await runs[name]())
    await pool.close()
    return rates


def report(rates: dict[str, list[float]], check: bool) -> int:
    print(f"{'checkpointer':<34}{'turns/s (median)':>18}{'runs':>30}")
    for name, values in rates.items():
        shown = " ".join(f"{v:,.0f}" for v in values)
        print(f"{name:<34}{statistics.median(values):>18,.0f}{shown:>30}")
    ratio = statistics.median(rates[OURS]) / statistics.median(rates[THEIRS])
    met = ratio >= 1.0
    print(f"\n{OURS} / {THEIRS}: {ratio:.2f}x (target >= 1.0x: {'met' if met else 'NOT met'})")
    return 1 if check and not met else 0


def main(argv: list[str] | None = None) -> int:
    (rounds, turns), check = parse_args(argv, __doc__, quick=(3, 5), full=(5, 20),
                                        quick_help="3 rounds of 5 turns per thread")
    if (why := postgres_missing()) is not None:
        print(f"not measured: {why}", file=sys.stderr)
        return 0
    with private_postgres() as url:
        print_header("LangGraph on PostgreSQL: turns per second, many threads at once",
                     [*environment(), ("threads", f"{THREADS} x {turns} turns, {rounds} rounds"),
                      ("pools", f"{CONNECTIONS} connections each")])
        rates = asyncio.run(measure(url, rounds, turns))
    return report(rates, check)


if __name__ == "__main__":
    sys.exit(main())
