"""How much client CPU does a LangGraph chat turn cost, per checkpointer?

The chat graph of ``langgraph_steps.py`` (one 200-character exchange per
turn) on LedgerSaver and on its peer in the same process, turn for turn
(interleaved): ``sqlite://`` against SqliteSaver, and ``postgresql://``
against PostgresSaver on a private PostgreSQL cluster (``_postgres.py``).
CPU time, not wall time: the process's CPU per ``invoke`` (every thread:
LangGraph runs ``put`` and ``put_writes`` on its executor), and the calling
thread's CPU per ``put``, ``put_writes`` and ``get_tuple`` of the latest
checkpoint; medians over ``--rounds`` turns from each length on (the thread
grows by that many turns as it is measured). The database server's own
CPU is not counted: this is what the application's process pays. A report,
not a test: it asserts nothing.

    python benchmarks/langgraph_cpu.py                    # both, 10 and 100 turns
    python benchmarks/langgraph_cpu.py --peer sqlite --lengths 10,100,1000
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import psycopg
from _postgres import postgres_missing, private_postgres
from _report import environment, print_header
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph_steps import USER_TEXT, chat_graph
from psycopg.rows import dict_row

from chatledger.langgraph import LedgerSaver

CALLS = ("put", "put_writes", "get_tuple")


class CpuTimed:
    """The calling thread's CPU in put, put_writes and get_tuple (of the latest)."""

    def start_cpu(self) -> None:
        self.cpu: dict[str, list[int]] = {call: [] for call in CALLS}

    def put(self, *args: Any) -> Any:
        started = time.thread_time_ns()
        try:
            return super().put(*args)  # type: ignore[misc]
        finally:
            self.cpu["put"].append(time.thread_time_ns() - started)

    def put_writes(self, *args: Any) -> None:
        started = time.thread_time_ns()
        try:
            super().put_writes(*args)  # type: ignore[misc]
        finally:
            self.cpu["put_writes"].append(time.thread_time_ns() - started)

    def get_tuple(self, config: Any) -> Any:
        started = time.thread_time_ns()
        try:
            return super().get_tuple(config)  # type: ignore[misc]
        finally:
            if not config["configurable"].get("checkpoint_id"):
                self.cpu["get_tuple"].append(time.thread_time_ns() - started)


class CpuSqlite(CpuTimed, SqliteSaver):
    pass


class CpuPostgres(CpuTimed, PostgresSaver):
    pass


class CpuLedger(CpuTimed, LedgerSaver):
    pass


@contextmanager
def contenders(peer: str) -> Iterator[tuple[Any, Any]]:
    """(the peer, LedgerSaver) on the same kind of database."""
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        if peer == "sqlite":
            conn = sqlite3.connect(workdir / "langgraph.db", check_same_thread=False)
            stack.callback(conn.close)
            theirs: Any = CpuSqlite(conn)
            ours = stack.enter_context(CpuLedger.from_url(f"sqlite:///{workdir}/ledger.db"))
        else:
            url = stack.enter_context(private_postgres())
            theirs = CpuPostgres(stack.enter_context(psycopg.Connection.connect(
                url, autocommit=True, prepare_threshold=0, row_factory=dict_row)))
            theirs.setup()
            ours = stack.enter_context(CpuLedger.from_url(f"{url}?migrate=true",
                                                          namespace="bench"))
        yield theirs, ours


def _us(samples: list[int]) -> float:
    return statistics.median(samples) / 1_000 if samples else float("nan")


def measure(peer: str, lengths: list[int], rounds: int) -> None:
    with contenders(peer) as (theirs, ours):
        savers = {"peer": theirs, "ours": ours}
        graphs = {name: chat_graph(saver) for name, saver in savers.items()}
        for saver in savers.values():
            saver.start_cpu()
        config = {"configurable": {"thread_id": "bench"}}
        turns = 0
        for length in lengths:
            while turns < length:
                for graph in graphs.values():
                    graph.invoke({"messages": [("user", USER_TEXT)]}, config)
                turns += 1
            invoke: dict[str, list[int]] = {name: [] for name in savers}
            for saver in savers.values():
                saver.start_cpu()
            for _ in range(rounds):
                for name, graph in graphs.items():
                    started = time.process_time_ns()
                    graph.invoke({"messages": [("user", USER_TEXT)]}, config)
                    invoke[name].append(time.process_time_ns() - started)
            turns += rounds
            cells = {name: [_us(invoke[name]), *(_us(saver.cpu[c]) for c in CALLS)]
                     for name, saver in savers.items()}
            label = {"peer": "SqliteSaver" if peer == "sqlite" else "PostgresSaver",
                     "ours": f"LedgerSaver {peer}"}
            for name, row in cells.items():
                print(f"{label[name]:<24}{length:>7,}" + "".join(f"{v:>14,.0f}" for v in row))
            ratios = [o / t for o, t in zip(cells["ours"], cells["peer"], strict=True)]
            print(f"{'  ratio (target <= 1.0x)':<31}" + "".join(f"{r:>13.2f}x" for r in ratios))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--peer", choices=("sqlite", "postgres"), action="append")
    parser.add_argument("--lengths", default="10,100", help="thread lengths, in turns")
    parser.add_argument("--rounds", type=int, default=20, help="turns measured per length")
    args = parser.parse_args(argv)
    peers = args.peer or ["sqlite", "postgres"]
    if "postgres" in peers and (why := postgres_missing()) is not None:
        print(f"postgres: {why}: skipped")
        peers.remove("postgres")
    lengths = [int(n) for n in args.lengths.split(",")]
    print_header("LangGraph checkpointers: client CPU per chat turn", [
        *environment(), ("turns", args.lengths), ("rounds", f"{args.rounds}, medians")])
    print(f"{'saver':<24}{'turns':>7}" + "".join(
        f"{h:>14}" for h in ("invoke µs", "put µs", "put_writes µs", "get_tuple µs")))
    for peer in peers:
        measure(peer, lengths, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
