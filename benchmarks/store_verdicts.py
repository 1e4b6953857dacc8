#!/usr/bin/env python3
"""check_store on LangGraph's stores and on LedgerStore, side by side: the table of
docs/testing.md.

    python benchmarks/store_verdicts.py [--puts 50]

SQLite files live in a temporary directory; Redis is a private redis-server and
PostgreSQL a private cluster, both on free loopback ports (never shared ones).
LedgerStore runs with its default options (``max_message_bytes`` 1 MiB).
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Iterator
from pathlib import Path

from _postgres import private_postgres
from langgraph.store.memory import InMemoryStore

from chatledger.testing import RedisServer, StoreReport, check_store
from chatledger.testing._stores import CLAUSES

SQLITE_STORE = "langgraph.store.sqlite:SqliteStore.from_conn_string"
POSTGRES_STORE = "langgraph.store.postgres:PostgresStore.from_conn_string"
LEDGER_STORE = "chatledger.langgraph:LedgerStore.from_url"


def in_memory(target: str) -> InMemoryStore:
    return InMemoryStore()


def checks(directory: Path, redis_url: str, postgres: str,
           puts: int) -> Iterator[tuple[str, StoreReport]]:
    base = postgres.rsplit("/", 1)[0]
    yield "InMemoryStore (threads)", check_store(in_memory, mode="threads", puts=puts)
    yield "SqliteStore", check_store(SQLITE_STORE, str(directory / "langgraph.db"), puts=puts)
    yield "PostgresStore", check_store(POSTGRES_STORE, postgres, puts=puts)
    yield "LedgerStore memory:// (threads)", check_store(
        LEDGER_STORE, "memory://verdicts", mode="threads", puts=puts)
    yield "LedgerStore sqlite://", check_store(
        LEDGER_STORE, f"sqlite:///{directory}/ledger.db", puts=puts)
    yield "LedgerStore redis://", check_store(LEDGER_STORE, redis_url, puts=puts)
    yield "LedgerStore postgresql://", check_store(
        LEDGER_STORE, f"{base}/postgres?migrate=true&namespace=verdicts", puts=puts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--puts", type=int, default=50, help="rounds per writer")
    options = parser.parse_args()
    print("| store | " + " | ".join(CLAUSES) + " |")
    print("|---|" + "---|" * len(CLAUSES))
    reasons: list[str] = []
    with RedisServer() as redis, private_postgres() as postgres, \
            tempfile.TemporaryDirectory() as directory:
        for name, report in checks(Path(directory), redis.url, postgres, options.puts):
            print(f"| {name} | " + " | ".join(report.verdict(c).verdict for c in CLAUSES)
                  + " |", flush=True)
            reasons += [f"{name}, {v.clause}: {v.reason}" for v in report.verdicts
                        if v.verdict != "pass"]
    print("\n" + "\n".join(reasons))


if __name__ == "__main__":
    main()
