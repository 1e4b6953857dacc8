"""What does one LangGraph step cost as a chat thread grows, per checkpointer?

The same graph runs on every saver: a chat agent whose ``messages`` channel
grows by one 200-character exchange per turn (a 100-character user message, a
100-character reply from a fake model node). A turn is three checkpoints
(LangGraph's input, start and node steps). At each thread length (10, 100 and
1,000 turns; ``--quick``: 10 and 100) the script runs ``WINDOW`` more turns and
reports, per checkpoint put:

- **bytes per step**: payload bytes the saver stored during the window,
  divided by the puts: the serialized checkpoints, metadata, channel values
  and writes (SQLite: the blob columns; memory: the bytes objects it holds;
  chatledger: the stored entries; chatledger on Redis: ``MEMORY USAGE`` of the
  thread's keys, exact (``SAMPLES 0``), which includes Redis's own overhead);
- **bytes/step, whole thread**: all payload bytes stored since the thread
  began, divided by all its puts: the amortized cost, which a window of 5
  turns can miss (LedgerSaver stores a growing list as deltas with a
  snapshot now and then; a window holds one snapshot or none);
- **µs per step**: the time spent in ``put`` and ``get_tuple`` during the
  window, divided by the puts.

Savers: LangGraph's ``InMemorySaver`` (a blob per channel per version, as the
Postgres saver stores them; the Postgres saver itself is not installed here, so
it is not measured) and ``SqliteSaver`` (the whole state in every checkpoint),
against ``LedgerSaver`` on ``sqlite://`` and, when ``redis-server`` is on the
PATH, on a private Redis it starts. A report, not a test: it asserts nothing.

    python benchmarks/langgraph_steps.py            # 10, 100 and 1,000 turns
    python benchmarks/langgraph_steps.py --quick    # 10 and 100 turns
    python benchmarks/langgraph_steps.py --only LedgerSaver   # only the savers so named
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from _report import environment, print_header
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph

from chatledger.langgraph import LedgerSaver
from chatledger.testing.redis_server import RedisServer

LENGTHS = (10, 100, 1_000)
QUICK_LENGTHS = (10, 100)
WINDOW = 5
THREAD = "bench"
USER_TEXT = "u" * 100
REPLY_TEXT = "a" * 100


def chat_graph(saver: Any) -> Any:
    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(REPLY_TEXT)]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    return builder.compile(checkpointer=saver)


class Timed:
    """Counts puts and the time spent in put and get_tuple, on any saver class."""

    puts = 0
    spent_ns = 0

    def put(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter_ns()
        try:
            return super().put(*args, **kwargs)  # type: ignore[misc]
        finally:
            self.spent_ns += time.perf_counter_ns() - started
            self.puts += 1

    def get_tuple(self, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter_ns()
        try:
            return super().get_tuple(*args, **kwargs)  # type: ignore[misc]
        finally:
            self.spent_ns += time.perf_counter_ns() - started


class TimedMemory(Timed, InMemorySaver):
    pass


class TimedSqlite(Timed, SqliteSaver):
    pass


class TimedLedger(Timed, LedgerSaver):
    pass


@dataclass
class Contender:
    name: str
    saver: Any
    stored_bytes: Callable[[], int]


def _bytes_in(value: Any) -> int:
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    if isinstance(value, dict):
        return sum(_bytes_in(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return sum(_bytes_in(v) for v in value)
    return 0


def _sql_bytes(path: Path, query: str) -> Callable[[], int]:
    def measure() -> int:
        with sqlite3.connect(path) as conn:
            return int(sum(row[0] or 0 for row in conn.execute(query)))
    return measure


def _redis_bytes(url: str, namespace: str) -> Callable[[], int]:
    def measure() -> int:
        client = redis.Redis.from_url(url)
        try:
            return sum(client.memory_usage(key, samples=0) or 0
                       for key in client.scan_iter(match=f"*{{{namespace}:*"))
        finally:
            client.close()
    return measure


@contextmanager
def contenders(workdir: Path, redis_url: str | None) -> Iterator[list[Contender]]:
    with ExitStack() as stack:
        memory = TimedMemory()
        sqlite_conn = sqlite3.connect(workdir / "langgraph.db", check_same_thread=False)
        stack.callback(sqlite_conn.close)
        found = [
            Contender("InMemorySaver", memory,
                      lambda: _bytes_in([memory.storage, memory.blobs, memory.writes])),
            Contender("SqliteSaver", TimedSqlite(sqlite_conn), _sql_bytes(
                workdir / "langgraph.db",
                "SELECT sum(length(checkpoint) + length(metadata)) FROM checkpoints"
                " UNION ALL SELECT sum(length(value)) FROM writes")),
        ]
        ledger = stack.enter_context(TimedLedger.from_url(f"sqlite:///{workdir}/ledger.db"))
        found.append(Contender("LedgerSaver sqlite://", ledger, _sql_bytes(
            workdir / "ledger.db", "SELECT sum(length(body)) FROM entries")))
        if redis_url is not None:
            on_redis = stack.enter_context(TimedLedger.from_url(redis_url, namespace="bench"))
            found.append(Contender("LedgerSaver redis://", on_redis,
                                   _redis_bytes(redis_url, "bench")))
        yield found


@dataclass
class Cell:
    bytes_per_step: float
    us_per_step: float
    bytes_per_step_overall: float


def measure(contender: Contender, lengths: tuple[int, ...]) -> dict[int, Cell]:
    graph = chat_graph(contender.saver)
    config = {"configurable": {"thread_id": THREAD}}
    cells, turns = {}, 0
    for length in lengths:
        while turns < length:
            graph.invoke({"messages": [("user", USER_TEXT)]}, config)
            turns += 1
        saver = contender.saver
        before, puts, spent = contender.stored_bytes(), saver.puts, saver.spent_ns
        for _ in range(WINDOW):
            graph.invoke({"messages": [("user", USER_TEXT)]}, config)
        turns += WINDOW
        steps, stored = saver.puts - puts, contender.stored_bytes()
        cells[length] = Cell((stored - before) / steps, (saver.spent_ns - spent) / steps / 1_000,
                             stored / saver.puts)
    return cells


def print_table(results: dict[str, dict[int, Cell]], lengths: tuple[int, ...]) -> None:
    print(f"{'saver':<24}{'turns':>8}{'bytes/step':>14}{'whole thread':>14}{'µs/step':>12}")
    print("-" * 72)
    for name, cells in results.items():
        for length in lengths:
            cell = cells[length]
            print(f"{name:<24}{length:>8,}{cell.bytes_per_step:>14,.0f}"
                  f"{cell.bytes_per_step_overall:>14,.0f}{cell.us_per_step:>12,.1f}")
    print()
    ours = "LedgerSaver sqlite://"
    for other in ("InMemorySaver", "SqliteSaver"):
        if other not in results or ours not in results:
            continue
        print(f"{other} / {ours}, bytes per step and time per step:")
        for length in lengths:
            theirs, mine = results[other][length], results[ours][length]
            size = theirs.bytes_per_step / mine.bytes_per_step
            print(f"  {length:>6,} turns   bytes {size:>8.2f}x"
                  f"   time {theirs.us_per_step / mine.us_per_step:>8.2f}x")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 and 100 turns only")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only the savers whose name contains NAME (repeatable)")
    args = parser.parse_args(argv)
    lengths = QUICK_LENGTHS if args.quick else LENGTHS
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        redis_url = None
        if shutil.which("redis-server"):
            redis_url = stack.enter_context(RedisServer()).url
        facts = [*environment(), ("turns", ", ".join(f"{n:,}" for n in lengths)),
                 ("window", f"{WINDOW} turns measured at each length"),
                 ("redis", redis_url or "redis-server not on the PATH: skipped"),
                 ("postgres", "langgraph-checkpoint-postgres not installed: not measured")]
        print_header("LangGraph checkpointers: cost per step as a chat thread grows", facts)
        with contenders(workdir, redis_url) as found:
            results = {c.name: measure(c, lengths) for c in found
                       if not args.only or any(name in c.name for name in args.only)}
    print_table(results, lengths)
    return 0


if __name__ == "__main__":
    sys.exit(main())
