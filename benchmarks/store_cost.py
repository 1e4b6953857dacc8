"""LedgerStore against SqliteStore and PostgresStore: put, get, search, list_namespaces.

Side by side in one process, on the same machine: LedgerStore on a SQLite file
beside SqliteStore's, and on a private PostgreSQL cluster (PostgreSQL's
defaults) beside PostgresStore in another database of the same server. Each
store first holds ``items`` items (one namespace per 10 items, each put with
a deterministic embedding of its text: no model); then each operation runs
``ops`` times on ours and on theirs in turn, alternating which goes first, so
that a loaded machine slows both alike. Prints the medians in µs and the ratio
ours / theirs (target: at most 1.0x for put and get):

- ``put``: a new item (``index=False``: no embedding, the write alone);
- ``get``: an item that exists;
- ``search``: one namespace of 10 items, with a filter;
- ``semantic``: a query over every item (prefix ``("users",)``, limit 10):
  SqliteStore needs sqlite-vec (and a Python that loads extensions),
  PostgresStore pgvector: where they cannot run it, only ours is measured;
- ``list_namespaces``: prefix ``("users",)``, limit 100.

    python benchmarks/store_cost.py            # 100 and 10,000 items
    python benchmarks/store_cost.py --quick    # 100 items
    python benchmarks/store_cost.py --pgvector --semantic   # PostgreSQL with pgvector

``--pgvector``: the PostgreSQL cluster runs pgserver's binaries (the dev
extra), which have pgvector: PostgresStore then searches with it (its default
index, HNSW: approximate) and LedgerStore with its exact ``ORDER BY``
distance; ``--exact``: PostgresStore without an ANN index too
(``ann_index_config={"kind": "flat"}``). ``--semantic``: only the semantic
search (SQLite not run), five times as many calls, and the server's CPU per
call (its processes' CPU time from /proc, read around each call: the mean),
which the client's wait for a loaded machine's scheduler does not inflate.
Each line also gives the client's CPU per call (``process_time``, median),
which a loaded machine inflates far less than the wall time.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import _report
from _postgres import postgres_missing, private_postgres
from langgraph.store.base import BaseStore, IndexConfig, PutOp
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore

from chatledger.langgraph import LedgerStore
from chatledger.testing._pgvector_server import pgvector_bin_dir

DIMS = 64
OPS = 200
Call = Callable[[BaseStore, int], object]


def embed(texts: list[str]) -> list[list[float]]:
    """A deterministic bag-of-words embedding: each word adds 1 to a bucket."""
    vectors = []
    for text in texts:
        vector = [0.0] * DIMS
        for word in text.split():
            vector[zlib.crc32(word.encode()) % DIMS] += 1.0
        vectors.append(vector)
    return vectors


INDEX: IndexConfig = {"dims": DIMS, "embed": embed, "fields": ["text"]}
TOPICS = ("coffee", "tea", "hiking", "chess", "jazz", "python", "rust", "sailing")


def _put_op(i: int) -> PutOp:
    text = f"memory {i} about {TOPICS[i % len(TOPICS)]} and {TOPICS[i // 7 % len(TOPICS)]}"
    return PutOp(("users", f"u{i // 10}"), f"k{i}", {"i": i, "text": text})


def _fill(store: BaseStore, items: int) -> None:
    for start in range(0, items, 500):
        store.batch([_put_op(i) for i in range(start, min(items, start + 500))])


def _plan(items: int, semantic: bool) -> list[tuple[str, Call, int]]:
    namespaces = max(items // 10, 1)
    plan: list[tuple[str, Call, int]] = [
        ("put", lambda s, i: s.put(("users", f"u{i % namespaces}"), f"n{i}", {"i": i},
                                   index=False), OPS),
        ("get", lambda s, i: s.get(("users", f"u{i % namespaces}"), f"k{i * 7 % items}"), OPS),
        ("search", lambda s, i: s.search(("users", f"u{i % namespaces}"),
                                         filter={"i": {"$gte": 0}}), OPS // 4),
        ("list_namespaces", lambda s, i: s.list_namespaces(prefix=("users",), limit=100),
         max(OPS // 20, 5)),
    ]
    if semantic:
        plan.append(("semantic", lambda s, i: s.search(
            ("users",), query=f"about {TOPICS[i % len(TOPICS)]}", limit=10), max(OPS // 40, 5)))
    return plan


Timings = tuple[float, float, float | None]  # µs per call: wall, client CPU (medians), server CPU
_TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")


class ServerCpu:
    """CPU time of a local PostgreSQL's processes (the postmaster's children, from
    /proc): read around each call, summed per contender; ticks of 10 ms, so only the
    mean over many calls means anything."""

    def __init__(self, url: str) -> None:
        import psycopg  # noqa: PLC0415

        with psycopg.connect(url) as connection:
            row = connection.execute("SELECT pg_backend_pid()").fetchone()
            assert row is not None
            # While the backend lives: once the connection closes, its /proc entry goes.
            self.postmaster = _stat(int(row[0]))[1]

    def ns(self) -> int:
        return sum(ticks for _, parent, ticks in map(_stat, _pids())
                   if parent == self.postmaster) * _TICK_NS


def _pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _stat(pid: int) -> tuple[int, int, int]:
    """(pid, parent, utime + stime ticks); a process gone meanwhile counts 0."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return pid, -1, 0
    return pid, int(fields[1]), int(fields[11]) + int(fields[12])


def _once(store: BaseStore, call: Call, i: int,
          server: ServerCpu | None = None) -> tuple[int, int, int]:
    before = server.ns() if server is not None else 0
    started, cpu = time.perf_counter_ns(), time.process_time_ns()
    call(store, i)
    wall, cpu = time.perf_counter_ns() - started, time.process_time_ns() - cpu
    return wall, cpu, (server.ns() - before if server is not None else 0)


def _medians(samples: list[tuple[int, int, int]], server: bool) -> Timings:
    return (_report.median_us([wall for wall, _, _ in samples]),
            _report.median_us([cpu for _, cpu, _ in samples]),
            sum(s for _, _, s in samples) / len(samples) / 1_000 if server else None)


def measure(ours: BaseStore, theirs: BaseStore | None, items: int, only: str | None = None,
            server: ServerCpu | None = None) -> dict[str, tuple[Timings, Timings | None]]:
    """Median µs per op, (ours, theirs); theirs None where it cannot run the op.
    ``only``: that op alone; ``server``: also the server's mean CPU per call."""
    _fill(ours, items)
    if theirs is not None:
        _fill(theirs, items)
    found: dict[str, tuple[Timings, Timings | None]] = {}
    for name, call, count in _plan(items, semantic=True):
        if only is not None and name != only:
            continue
        calls = count if only is None else 5 * count  # one op alone: more samples
        runs_theirs = theirs is not None and (name != "semantic" or _indexed(theirs))
        mine: list[tuple[int, int, int]] = []
        other: list[tuple[int, int, int]] = []
        for i in range(calls):
            if runs_theirs and i % 2:
                other.append(_once(theirs, call, i, server))  # type: ignore[arg-type]
            mine.append(_once(ours, call, i, server))
            if runs_theirs and not i % 2:
                other.append(_once(theirs, call, i, server))  # type: ignore[arg-type]
        found[name] = (_medians(mine, server is not None),
                       _medians(other, server is not None) if other else None)
    return found


def _indexed(store: BaseStore) -> bool:
    return getattr(store, "index_config", None) is not None


@contextlib.contextmanager
def _sqlite_pair(folder: Path) -> Iterator[tuple[BaseStore, BaseStore]]:
    folder.mkdir(parents=True, exist_ok=True)
    # SqliteStore's semantic search loads sqlite-vec: a Python built without
    # loadable extensions cannot, and then only ours is measured.
    index = INDEX if hasattr(sqlite3.Connection, "enable_load_extension") else None
    with SqliteStore.from_conn_string(str(folder / "theirs.db"), index=index) as theirs, \
            LedgerStore.from_url(f"sqlite:///{folder / 'ours.db'}", index=INDEX) as ours:
        theirs.setup()
        yield ours, theirs


@contextlib.contextmanager
def _postgres_pair(url: str, run: int,
                   exact: bool = False) -> Iterator[tuple[BaseStore, BaseStore]]:
    import psycopg  # noqa: PLC0415

    base = url.rsplit("/", 1)[0]
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE theirs{run}")
        admin.execute(f"CREATE DATABASE ours{run}")
        vector = admin.execute("SELECT count(*) FROM pg_available_extensions"
                               " WHERE name = 'vector'").fetchone()
    index = INDEX if vector and vector[0] else None
    if index is not None and exact:  # no HNSW: every row scored, as ours
        index = {**index, "ann_index_config": {"kind": "flat"}}  # type: ignore[typeddict-unknown-key]
    with PostgresStore.from_conn_string(f"{base}/theirs{run}", index=index) as theirs, \
            LedgerStore.from_url(f"{base}/ours{run}?migrate=true", index=INDEX) as ours:
        theirs.setup()
        yield ours, theirs


def report(name: str, items: int,
           found: dict[str, tuple[Timings, Timings | None]]) -> None:
    for op, ((ours, ours_cpu, ours_server), theirs) in found.items():
        line = f"{name:<11}{items:>7}  {op:<16}{ours:>10.0f}"
        if theirs is None:
            print(f"{line}{'-':>10}{'(theirs n/a)':>9}{ours_cpu:>10.0f}{'-':>10}")
        else:
            print(f"{line}{theirs[0]:>10.0f}{ours / theirs[0]:>8.2f}x"
                  f"{ours_cpu:>10.0f}{theirs[1]:>10.0f}"
                  + (f"{ours_server:>10.0f}{theirs[2]:>10.0f}" if ours_server is not None
                     and theirs[2] is not None else ""))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pgvector, semantic, exact = ("--pgvector" in argv, "--semantic" in argv,
                                 "--exact" in argv)
    argv = [arg for arg in argv if arg not in ("--pgvector", "--semantic", "--exact")]
    sizes, _ = _report.parse_args(argv, __doc__, quick=(100,), full=(100, 10_000),
                                  quick_help="100 items only", check=False)
    _report.print_header("LedgerStore vs LangGraph's stores (median µs per call, interleaved)",
                         _report.environment())
    print(f"{'backend':<11}{'items':>7}  {'op':<16}{'ours':>10}{'theirs':>10}{'ratio':>9}"
          f"{'ours cpu':>10}{'their cpu':>10}"
          + (f"{'ours srv':>10}{'their srv':>10}" if semantic else ""))
    only = "semantic" if semantic else None
    if not semantic:
        with tempfile.TemporaryDirectory(prefix="store-cost-") as folder:
            for run, items in enumerate(sizes):
                with _sqlite_pair(Path(folder) / str(run)) as (ours, theirs):
                    report("sqlite", items, measure(ours, theirs, items))
    bin_dir = Path(pgvector_bin_dir()) if pgvector else None
    missing = None if pgvector else postgres_missing()
    if missing:
        print(f"postgres: not measured ({missing})")
        return 0
    with private_postgres(bin_dir=bin_dir) as url:
        for run, items in enumerate(sizes):
            with _postgres_pair(url, run, exact) as (ours, theirs):
                server = ServerCpu(url) if semantic else None
                report("pgvector" if pgvector else "postgres", items,
                       measure(ours, theirs, items, only, server))
    return 0


if __name__ == "__main__":
    sys.exit(main())
