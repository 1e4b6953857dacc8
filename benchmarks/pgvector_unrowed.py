"""What LedgerStore's pgvector search pays to miss no item: the statement reading the
items without rows, next to the search statement, server-side (EXPLAIN ANALYZE).

    python benchmarks/pgvector_unrowed.py [--items 2000]

On a private pgvector cluster (pgserver's binaries, the dev extra): ``--items``
items of 64 dimensions put through LedgerStore (every one with rows, the usual
case), then each statement's median execution time over 15 runs, interleaved,
and their ratio (robust to load: both run on the same server in turns).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from typing import Any

import psycopg
from _report import environment

from chatledger import open_store
from chatledger._backends.contract import prefix_upper_bound
from chatledger._backends.postgres.vectors import VectorStatements
from chatledger.langgraph import LedgerStore
from chatledger.testing._pgvector_server import pgvector_server

DIMS = 64
RUNS = 15


def _embed(texts: list[str]) -> list[list[float]]:
    return [[math.sin(len(text) * (d + 1) + sum(map(ord, text)) % 97) for d in range(DIMS)]
            for text in texts]


def _ms(connection: psycopg.Connection[Any], sql: str, params: dict[str, Any]) -> float:
    plan = connection.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params).fetchone()
    assert plan is not None
    return float(plan[0][0]["Execution Time"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    items = parser.parse_args().items
    for label, text in environment():
        print(f"{label}: {text}")
    server = pgvector_server()
    try:
        with LedgerStore(open_store(f"{server.url}?migrate=true&namespace=bench"),
                         owns_store=True, index={"dims": DIMS, "embed": _embed,
                                                 "fields": ["text"]}) as store:
            for i in range(items):
                store.put(("docs",), f"k{i}", {"text": f"text {i} " * (i % 7 + 1)})
        statements = VectorStatements('"chatledger"', '"public"')
        prefix = "lgs/docs/"
        params = {"ns": "bench", "prefix": prefix, "upper": prefix_upper_bound(prefix),
                  "now": time.time()}
        query = "[" + ",".join(map(repr, _embed(["query"])[0])) + "]"
        search = {**params, "q": query, "limit": 10, "offset": 0}
        with psycopg.connect(server.url) as connection:
            connection.execute("ANALYZE")
            unrowed, scored = [], []
            for _ in range(RUNS):
                unrowed.append(_ms(connection, statements.unrowed, params))
                scored.append(_ms(connection, statements.search("cosine"), search))
        a, b = statistics.median(unrowed), statistics.median(scored)
        print(f"{items} items, all with rows: items-without-rows statement {a:.3f} ms,"
              f" search statement {b:.3f} ms (median of {RUNS}); ratio {a / b:.2f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
