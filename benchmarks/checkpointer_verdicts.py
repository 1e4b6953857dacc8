#!/usr/bin/env python3
"""check_checkpointer on LangGraph's savers and on LedgerSaver, side by side: the
table of docs/testing.md.

    python benchmarks/checkpointer_verdicts.py [--runs 3] [--postgres postgresql://...]

SQLite files live in a temporary directory; Redis is a private redis-server on
a free port (never a shared one); Postgres runs only when given a URL (a server
of your own: the check creates LangGraph's tables in it).
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Iterator
from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver

from chatledger.testing import CheckpointerReport, RedisServer, check_checkpointer

SQLITE_SAVER = "langgraph.checkpoint.sqlite:SqliteSaver.from_conn_string"
POSTGRES_SAVER = "langgraph.checkpoint.postgres:PostgresSaver.from_conn_string"
LEDGER_SAVER = "chatledger.langgraph:LedgerSaver.from_url"


def in_memory(target: str) -> InMemorySaver:
    return InMemorySaver()


def checks(directory: Path, redis_url: str, postgres: str | None,
           ) -> Iterator[tuple[str, CheckpointerReport]]:
    yield "SqliteSaver", check_checkpointer(SQLITE_SAVER, str(directory / "langgraph.db"))
    if postgres:
        yield "PostgresSaver", check_checkpointer(POSTGRES_SAVER, postgres)
    yield "InMemorySaver (threads)", check_checkpointer(in_memory, mode="threads")
    yield "LedgerSaver sqlite://", check_checkpointer(
        LEDGER_SAVER, f"sqlite:///{directory}/ledger.db")
    yield "LedgerSaver redis://", check_checkpointer(LEDGER_SAVER, redis_url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--postgres", help="a PostgreSQL URL of your own")
    options = parser.parse_args()
    print("| saver | run | turns | acknowledged | refused | errors | forks "
          "| lost acknowledged | duplicated | ok |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with RedisServer() as redis, tempfile.TemporaryDirectory() as directory:
        for run in range(1, options.runs + 1):
            for name, report in checks(Path(directory), redis.url, options.postgres):
                print(f"| {name} | {run} | {len(report.turns)} | {len(report.acknowledged)} "
                      f"| {len(report.refused)} | {len(report.errors)} | {len(report.forks)} "
                      f"| {len(report.lost)} | {len(report.duplicates)} | {report.ok} |",
                      flush=True)
                if report.failures or report.errors or (report.ok != name.startswith("Ledger")):
                    print(report.summary())


if __name__ == "__main__":
    main()
