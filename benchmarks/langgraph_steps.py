"""What does one LangGraph step cost as a chat thread grows, per checkpointer?

The same graph runs on every saver, in one process, the savers side by side:
a chat agent whose ``messages`` channel grows by one 200-character exchange per
turn (a 100-character user message, a 100-character reply from a fake model
node). A turn is three checkpoints (LangGraph's input, start and node steps).
At each thread length (10, 100 and 1,000 turns; ``--quick``: 10 and 100) every
saver grows ``THREADS`` threads to that length (not timed), then runs
``WINDOW`` more turns on each, interleaved: each measured turn runs on every
saver in turn, the first saver of a round rotating, so that a loaded moment
slows them alike. More threads where a turn is short: a median of 5 turns at
10 turns swung by half from one run to the next. It reports:

- **bytes per step**: payload bytes the saver stored during the window,
  divided by the puts: the serialized checkpoints, metadata, channel values
  and writes (SQLite: the blob columns; Postgres: the bytea columns and the
  jsonb ones as text, uncompressed; memory: the bytes objects it holds;
  chatledger: the stored entries; chatledger on Redis: ``MEMORY USAGE`` of the
  thread's keys, exact (``SAMPLES 0``), which includes Redis's own overhead);
- **bytes/step, whole thread**: all payload bytes stored since the run
  began, divided by all its puts: the amortized cost, which a window of 5
  turns can miss (LedgerSaver stores a growing list as deltas with a
  snapshot now and then; a window holds one snapshot or none);
- **step µs**: per checkpoint, the time in its ``put`` plus the time in the
  ``put_writes`` calls LangGraph made with its id (a task's writes go on the
  checkpoint the task started from); the median over the window's checkpoints;
- **get_tuple µs**: the median time of LangGraph's ``get_tuple`` of the latest
  checkpoint (one at the start of every ``invoke``);
- **turn µs**: the median wall time of a whole ``graph.invoke`` turn.

LangGraph's default durability (``"async"``) is kept: ``put`` and
``put_writes`` run on LangGraph's background thread, overlapping the graph's
own work, so their times include waiting for the GIL; the turn is what a user
waits for.

Savers: LangGraph's ``InMemorySaver`` (a blob per channel per version),
``SqliteSaver`` (the whole state in every checkpoint) and ``PostgresSaver``
(a blob per channel per version) on a private PostgreSQL cluster the script
starts itself (``_postgres.py``: initdb and pg_ctl in a temporary directory,
on a free loopback port, stopped and deleted at the end; skipped with a note
without the binaries), against ``LedgerSaver`` on ``sqlite://`` and, when
``redis-server`` is on the PATH, on a private Redis it starts, and on
``postgresql://`` in the same cluster as PostgresSaver. After the table come the
ratios the project's targets are about: LedgerSaver sqlite:// against
SqliteSaver (target <= 1.0x) and against InMemorySaver (<= 2x), LedgerSaver
redis:// and postgresql:// against PostgresSaver (<= 1.0x). A report, not a test: it asserts
nothing.

    python benchmarks/langgraph_steps.py            # 10, 100 and 1,000 turns
    python benchmarks/langgraph_steps.py --quick    # 10 and 100 turns
    python benchmarks/langgraph_steps.py --only LedgerSaver   # only the savers so named
"""

from __future__ import annotations

import argparse
import gc
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import redis
from _postgres import postgres_missing, private_postgres
from _report import environment, print_header
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from psycopg.rows import dict_row

from chatledger.langgraph import LedgerSaver
from chatledger.testing import RedisServer

LENGTHS = (10, 100, 1_000)
QUICK_LENGTHS = (10, 100)
WINDOW = 5
THREADS = {10: 8, 100: 3}
"""Threads measured at each length (1 where not named): WINDOW turns on each."""
THREAD = "bench"
USER_TEXT = "u" * 100
REPLY_TEXT = "a" * 100

MEMORY, SQLITE, POSTGRES = "InMemorySaver", "SqliteSaver", "PostgresSaver"
LEDGER_SQLITE, LEDGER_REDIS = "LedgerSaver sqlite://", "LedgerSaver redis://"
LEDGER_POSTGRES = "LedgerSaver postgresql://"
SAVERS = (MEMORY, SQLITE, POSTGRES, LEDGER_SQLITE, LEDGER_REDIS, LEDGER_POSTGRES)
TARGETS = (  # (ours, theirs, the most ours may cost, as a multiple of theirs)
    (LEDGER_SQLITE, SQLITE, 1.0),
    (LEDGER_SQLITE, MEMORY, 2.0),
    (LEDGER_REDIS, POSTGRES, 1.0),
    (LEDGER_POSTGRES, POSTGRES, 1.0),
)


def chat_graph(saver: Any) -> Any:
    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(REPLY_TEXT)]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    return builder.compile(checkpointer=saver)


class Timed:
    """Times put, put_writes and get_tuple on any saver class (thread-safe:
    LangGraph calls put and put_writes from its background executor).

    ``step_ns`` maps a checkpoint id to the time in its put plus the put_writes
    calls on it; ``put_ids`` lists the ids put, in order; ``latest_ns`` holds
    the times of get_tuple calls for a thread's latest checkpoint.
    """

    puts = 0

    def start_timing(self) -> None:
        self._timing_lock = threading.Lock()
        self.step_ns: dict[str, int] = {}
        self.put_ids: list[str] = []
        self.latest_ns: list[int] = []

    def _add_step(self, checkpoint_id: str | None, elapsed: int, put: bool) -> None:
        with self._timing_lock:
            key = str(checkpoint_id)
            self.step_ns[key] = self.step_ns.get(key, 0) + elapsed
            if put:
                self.put_ids.append(key)
                self.puts += 1

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        started = time.perf_counter_ns()
        try:
            return super().put(config, checkpoint, metadata, new_versions)  # type: ignore[misc]
        finally:
            self._add_step(checkpoint["id"], time.perf_counter_ns() - started, put=True)

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        started = time.perf_counter_ns()
        try:
            super().put_writes(config, writes, task_id, task_path)  # type: ignore[misc]
        finally:
            self._add_step(config["configurable"].get("checkpoint_id"),
                           time.perf_counter_ns() - started, put=False)

    def get_tuple(self, config: Any) -> Any:
        started = time.perf_counter_ns()
        try:
            return super().get_tuple(config)  # type: ignore[misc]
        finally:
            if not config["configurable"].get("checkpoint_id"):
                elapsed = time.perf_counter_ns() - started
                with self._timing_lock:
                    self.latest_ns.append(elapsed)


class TimedMemory(Timed, InMemorySaver):
    pass


class TimedSqlite(Timed, SqliteSaver):
    pass


class TimedPostgres(Timed, PostgresSaver):
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


def _postgres_bytes(url: str) -> Callable[[], int]:
    query = ("SELECT sum(octet_length(checkpoint::text) + octet_length(metadata::text))"
             " FROM checkpoints"
             " UNION ALL SELECT sum(octet_length(blob)) FROM checkpoint_blobs"
             " UNION ALL SELECT sum(octet_length(blob)) FROM checkpoint_writes")

    def measure() -> int:
        with psycopg.connect(url, autocommit=True) as conn:
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


def _memory(stack: ExitStack, workdir: Path, servers: dict[str, str]) -> Contender:
    memory = TimedMemory()
    stack.callback(memory.storage.clear)  # frees what it held before the next saver runs
    stack.callback(memory.blobs.clear)
    stack.callback(memory.writes.clear)
    return Contender(MEMORY, memory,
                     lambda: _bytes_in([memory.storage, memory.blobs, memory.writes]))


def _sqlite(stack: ExitStack, workdir: Path, servers: dict[str, str]) -> Contender:
    conn = sqlite3.connect(workdir / "langgraph.db", check_same_thread=False)
    stack.callback(conn.close)
    return Contender(SQLITE, TimedSqlite(conn), _sql_bytes(
        workdir / "langgraph.db",
        "SELECT sum(length(checkpoint) + length(metadata)) FROM checkpoints"
        " UNION ALL SELECT sum(length(value)) FROM writes"))


def _postgres(stack: ExitStack, workdir: Path, servers: dict[str, str]) -> Contender:
    url = servers["postgres"]
    # As PostgresSaver.from_conn_string opens it.
    conn = stack.enter_context(psycopg.Connection.connect(
        url, autocommit=True, prepare_threshold=0, row_factory=dict_row))
    saver = TimedPostgres(conn)
    saver.setup()
    return Contender(POSTGRES, saver, _postgres_bytes(url))


def _ledger_sqlite(stack: ExitStack, workdir: Path, servers: dict[str, str]) -> Contender:
    saver = stack.enter_context(TimedLedger.from_url(f"sqlite:///{workdir}/ledger.db"))
    return Contender(LEDGER_SQLITE, saver, _sql_bytes(
        workdir / "ledger.db", "SELECT sum(length(body)) FROM entries"))


def _ledger_redis(stack: ExitStack, workdir: Path, servers: dict[str, str]) -> Contender:
    url = servers["redis"]
    saver = stack.enter_context(TimedLedger.from_url(url, namespace="bench"))
    return Contender(LEDGER_REDIS, saver, _redis_bytes(url, "bench"))


def _ledger_postgres(stack: ExitStack, workdir: Path, servers: dict[str, str]) -> Contender:
    url = servers["postgres"]  # the same cluster as PostgresSaver's, its own schema
    saver = stack.enter_context(TimedLedger.from_url(f"{url}?migrate=true", namespace="bench"))
    query = "SELECT sum(octet_length(body)) FROM chatledger.entries WHERE ns = 'bench'"

    def measure() -> int:
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute(query).fetchone()
            return int(row[0] or 0) if row else 0
    return Contender(LEDGER_POSTGRES, saver, measure)


OPENERS: dict[str, Callable[[ExitStack, Path, dict[str, str]], Contender]] = {
    MEMORY: _memory, SQLITE: _sqlite, POSTGRES: _postgres,
    LEDGER_SQLITE: _ledger_sqlite, LEDGER_REDIS: _ledger_redis,
    LEDGER_POSTGRES: _ledger_postgres,
}
NEEDS = {POSTGRES: "postgres", LEDGER_REDIS: "redis", LEDGER_POSTGRES: "postgres"}


@contextmanager
def opened(name: str, workdir: Path, servers: dict[str, str]) -> Iterator[Contender]:
    """The saver ``name``, with its timing started; closed (and emptied) on leaving."""
    with ExitStack() as stack:
        contender = OPENERS[name](stack, workdir, servers)
        contender.saver.start_timing()
        yield contender


@dataclass
class Cell:
    bytes_per_step: float
    bytes_per_step_overall: float
    step_us: float
    get_tuple_us: float
    turn_us: float

    def measure(self, name: str) -> float:
        return float(getattr(self, name))


MEASURES = (("step", "step_us"), ("get_tuple", "get_tuple_us"), ("turn", "turn_us"))


def _median_us(samples: list[int]) -> float:
    return statistics.median(samples) / 1_000 if samples else float("nan")


def _turn(graph: Any, thread: str) -> None:
    graph.invoke({"messages": [("user", USER_TEXT)]}, {"configurable": {"thread_id": thread}})


def measure(contenders: dict[str, Contender],
            lengths: tuple[int, ...]) -> dict[str, dict[int, Cell]]:
    """Every contender's cells, their measured turns interleaved."""
    names = list(contenders)
    graphs = {name: chat_graph(contenders[name].saver) for name in names}
    cells: dict[str, dict[int, Cell]] = {name: {} for name in names}
    rounds = 0
    for length in lengths:
        threads = [f"{THREAD}-{length}-{k}" for k in range(THREADS.get(length, 1))]
        for name in names:
            for thread in threads:
                for _ in range(length):
                    _turn(graphs[name], thread)
        before = {name: contenders[name].stored_bytes() for name in names}
        puts = {name: contenders[name].saver.puts for name in names}
        turn_ns: dict[str, list[int]] = {name: [] for name in names}
        for name in names:
            contenders[name].saver.start_timing()
        for _ in range(WINDOW):
            for thread in threads:
                first = rounds % len(names)
                rounds += 1
                for name in names[first:] + names[:first]:
                    started = time.perf_counter_ns()
                    _turn(graphs[name], thread)
                    turn_ns[name].append(time.perf_counter_ns() - started)
        for name in names:
            saver, stored = contenders[name].saver, contenders[name].stored_bytes()
            cells[name][length] = Cell(
                bytes_per_step=(stored - before[name]) / (saver.puts - puts[name]),
                bytes_per_step_overall=stored / saver.puts,
                step_us=_median_us([saver.step_ns[i] for i in saver.put_ids]),
                get_tuple_us=_median_us(saver.latest_ns),
                turn_us=_median_us(turn_ns[name]),
            )
    return cells


def print_table(results: dict[str, dict[int, Cell]], lengths: tuple[int, ...],
                skipped: dict[str, str]) -> None:
    print(f"{'saver':<24}{'turns':>7}{'bytes/step':>12}{'whole thread':>14}"
          f"{'step µs':>12}{'get_tuple µs':>14}{'turn µs':>12}")
    print("-" * 95)
    for name, cells in results.items():
        for length in lengths:
            cell = cells[length]
            print(f"{name:<24}{length:>7,}{cell.bytes_per_step:>12,.0f}"
                  f"{cell.bytes_per_step_overall:>14,.0f}{cell.step_us:>12,.1f}"
                  f"{cell.get_tuple_us:>14,.1f}{cell.turn_us:>12,.1f}")
    print()
    print("Ratios of the medians (* over the target):")
    for ours, theirs, target in TARGETS:
        missing = [f"{n}: {skipped.get(n, 'not run')}" for n in (ours, theirs)
                   if n not in results]
        print(f"{ours} / {theirs} (target <= {target:.1f}x)")
        if missing:
            print(f"  not measured ({'; '.join(missing)})")
            continue
        print(f"  {'turns':>6}" + "".join(f"{label:>12}" for label, _ in MEASURES))
        for length in lengths:
            mine, other = results[ours][length], results[theirs][length]
            row = ""
            for _, field in MEASURES:
                ratio = mine.measure(field) / other.measure(field)
                row += f"{ratio:>10.2f}x{'*' if ratio > target else ' '}"
            print(f"  {length:>6,}{row}")
    print()


@contextmanager
def _maybe(wanted: bool, server: Callable[[], AbstractContextManager[str]]) -> Iterator[str | None]:
    if not wanted:
        yield None
        return
    with server() as url:
        yield url


@contextmanager
def _redis_url() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 and 100 turns only")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only the savers whose name contains NAME (repeatable)")
    args = parser.parse_args(argv)
    lengths = QUICK_LENGTHS if args.quick else LENGTHS
    chosen = [n for n in SAVERS if not args.only or any(part in n for part in args.only)]
    skipped: dict[str, str] = {}
    if shutil.which("redis-server") is None:
        skipped[LEDGER_REDIS] = "redis-server not on the PATH: skipped"
    if (why := postgres_missing()) is not None:
        skipped[POSTGRES] = skipped[LEDGER_POSTGRES] = f"{why}: skipped"
    chosen = [n for n in chosen if n not in skipped]
    started = time.monotonic()
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        servers: dict[str, str] = {}
        redis_url = stack.enter_context(_maybe(LEDGER_REDIS in chosen, _redis_url))
        postgres_url = stack.enter_context(_maybe(
            POSTGRES in chosen or LEDGER_POSTGRES in chosen, private_postgres))
        if redis_url is not None:
            servers["redis"] = redis_url
        if postgres_url is not None:
            servers["postgres"] = postgres_url
        facts = [*environment(), ("turns", ", ".join(f"{n:,}" for n in lengths)),
                 ("window", f"{WINDOW} turns on each of {THREADS} threads (else 1) at each length,"
                            " interleaved; medians"),
                 ("savers", ", ".join(chosen)),
                 ("redis", redis_url or skipped.get(LEDGER_REDIS, "not run")),
                 ("postgres", _postgres_fact(postgres_url, skipped))]
        print_header("LangGraph checkpointers: cost per step as a chat thread grows", facts)
        contenders = {name: stack.enter_context(opened(name, workdir, servers))
                      for name in chosen}
        gc.collect()
        results = measure(contenders, lengths)
    print_table(results, lengths, skipped)
    print(f"(ran in {time.monotonic() - started:,.0f} s)")
    return 0


def _postgres_fact(url: str | None, skipped: dict[str, str]) -> str:
    if url is None:
        return skipped.get(POSTGRES, "not run")
    with psycopg.connect(url) as conn:
        row = conn.execute("SHOW server_version").fetchone()
    version = row[0] if row else "?"
    return f"{url} (private cluster, PostgreSQL {version})"


if __name__ == "__main__":
    sys.exit(main())
