"""LedgerStore against SqliteStore and PostgresStore: put, get, search, list_namespaces.

Side by side in one process, on the same machine: LedgerStore on a SQLite file
beside SqliteStore's, and on a private PostgreSQL cluster (PostgreSQL's
defaults) beside PostgresStore in another database of the same server. Each
store first holds ``items`` items (one namespace per 10 items); then ``put``
and ``get`` are timed per call (median of ``ops`` calls), ``search`` (a
namespace of 10 items, with a filter) and ``list_namespaces`` (prefix, limit
100) per call. Prints medians in µs and the ratio ours / theirs (target: at
most 1.0x for put and get).

    python benchmarks/store_cost.py            # 100 and 10,000 items
    python benchmarks/store_cost.py --quick    # 100 items
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import _report
from _postgres import postgres_missing, private_postgres
from langgraph.store.base import BaseStore
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore

from chatledger.langgraph import LedgerStore

OPS = ("put", "get", "search", "list_namespaces")


def _fill(store: BaseStore, items: int) -> None:
    store.batch([_put_op(i) for i in range(items)])


def _put_op(i: int) -> Any:
    from langgraph.store.base import PutOp  # noqa: PLC0415

    return PutOp(("users", f"u{i // 10}"), f"k{i}", {"i": i, "text": f"memory {i}"})


def _timed(call: Callable[[int], object], count: int) -> float:
    samples = []
    for i in range(count):
        started = time.perf_counter_ns()
        call(i)
        samples.append(time.perf_counter_ns() - started)
    return _report.median_us(samples)


def measure(store: BaseStore, items: int, ops: int) -> dict[str, float]:
    _fill(store, items)
    namespaces = max(items // 10, 1)
    return {
        "put": _timed(lambda i: store.put(("users", f"u{i % namespaces}"), f"n{i}",
                                          {"i": i}), ops),
        "get": _timed(lambda i: store.get(("users", f"u{i % namespaces}"), f"k{i % items}"),
                      ops),
        "search": _timed(lambda i: store.search(("users", f"u{i % namespaces}"),
                                                filter={"i": {"$gte": 0}}), max(ops // 4, 5)),
        "list_namespaces": _timed(lambda i: store.list_namespaces(prefix=("users",)),
                                  max(ops // 20, 3)),
    }


@contextlib.contextmanager
def _sqlite_pair(folder: Path) -> Iterator[tuple[BaseStore, BaseStore]]:
    folder.mkdir(parents=True, exist_ok=True)
    with SqliteStore.from_conn_string(str(folder / "theirs.db")) as theirs, \
            LedgerStore.from_url(f"sqlite:///{folder / 'ours.db'}") as ours:
        theirs.setup()
        yield ours, theirs


@contextlib.contextmanager
def _postgres_pair(url: str, run: int) -> Iterator[tuple[BaseStore, BaseStore]]:
    import psycopg  # noqa: PLC0415

    base = url.rsplit("/", 1)[0]
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE theirs{run}")
        admin.execute(f"CREATE DATABASE ours{run}")
    with PostgresStore.from_conn_string(f"{base}/theirs{run}") as theirs, \
            LedgerStore.from_url(f"{base}/ours{run}?migrate=true") as ours:
        theirs.setup()
        yield ours, theirs


def report(name: str, items: int, ours: dict[str, float], theirs: dict[str, float]) -> None:
    for op in OPS:
        print(f"{name:<11}{items:>7}  {op:<16}{ours[op]:>10.0f}{theirs[op]:>10.0f}"
              f"{ours[op] / theirs[op]:>8.2f}x")


def main(argv: list[str] | None = None) -> int:
    sizes, _ = _report.parse_args(argv, __doc__, quick=(100,), full=(100, 10_000),
                                  quick_help="100 items only", check=False)
    _report.print_header("LedgerStore vs LangGraph's stores (median µs per call)",
                         _report.environment())
    print(f"{'backend':<11}{'items':>7}  {'op':<16}{'ours':>10}{'theirs':>10}{'ratio':>9}")
    with tempfile.TemporaryDirectory(prefix="store-cost-") as folder:
        for run, items in enumerate(sizes):
            ops = 200
            with _sqlite_pair(Path(folder) / str(run)) as (ours, theirs):
                report("sqlite", items, measure(ours, items, ops), measure(theirs, items, ops))
    missing = postgres_missing()
    if missing:
        print(f"postgres: not measured ({missing})")
        return 0
    with private_postgres() as url:
        for run, items in enumerate(sizes):
            with _postgres_pair(url, run) as (ours, theirs):
                report("postgres", items, measure(ours, items, 200),
                       measure(theirs, items, 200))
    return 0


if __name__ == "__main__":
    sys.exit(main())
