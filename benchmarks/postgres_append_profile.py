"""Where does a PostgreSQL append's time go, against a raw ``BEGIN; INSERT; COMMIT``?

The wall-time ratio of ``postgres_turn.py`` moves with the machine's load; this
script reports what does not: the server's work per statement and the client's
CPU. On one private cluster (``_postgres.private_postgres``, PostgreSQL's
defaults: ``fsync`` and ``synchronous_commit`` on, plus ``pg_stat_statements``
and ``auto_explain`` loaded) it runs, for each contender, one phase of appends
of a user/assistant pair to a session of 10 and one of 10,000 messages:

- chatledger: ``session.append([user, assistant])``;
- raw psycopg: ``INSERT`` of the same two rows into ``(session, seq bigserial,
  body jsonb)`` keyed by ``(session, seq)``, then ``COMMIT`` (psycopg sends
  ``BEGIN`` with the ``INSERT``).

Per append it reports: each statement's server time (``pg_stat_statements``:
planning and execution, the fsync of the commit inside ``COMMIT``), WAL bytes
(``pg_current_wal_lsn`` before and after), WAL records by type
(``pg_walinspect``: heap inserts, HOT updates, index inserts, locks, commits),
WAL syncs (``pg_stat_wal``), the server backends' CPU (``/proc/<pid>/schedstat``:
time on a CPU, which waiting for one does not inflate), the client's CPU
(``time.process_time``) and wall time (medians of blocks, interleaved: noisy on
a loaded machine). Then the plans of the append function's statements for one
append, as ``auto_explain`` logs them (``ANALYZE, BUFFERS, WAL``). A profile, not
a test: exits 0.

    python benchmarks/postgres_append_profile.py            # 1,000 appends each
    python benchmarks/postgres_append_profile.py --quick    # 200
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
from _postgres import private_postgres
from _report import environment, parse_args, print_header
from psycopg.types.json import Jsonb

from chatledger import assistant, open_store, user

SETTINGS = {"shared_preload_libraries": "pg_stat_statements,auto_explain",
            "pg_stat_statements.track_planning": "on", "pg_stat_statements.track": "all",
            "track_io_timing": "on",
            "track_wal_io_timing": "on"}
LENGTHS = (10, 10_000)
BLOCK = 20  # appends per timed block
STATS_FLUSH = 2.0  # s: an idle backend reports its statistics within a second or so


def text(i: int) -> str:
    return f"message {i}: " + "lorem ipsum dolor sit amet " * 3


class Ledger:
    name = "chatledger"

    def __init__(self, url: str) -> None:
        self.store = open_store(f"{url}?migrate=true", namespace="bench")

    def build(self, length: int) -> None:
        session = self.store.session(f"s-{length}")
        for start in range(0, length, 5_000):
            session.append([user(text(i)) for i in range(start, min(length, start + 5_000))])

    def append(self, length: int) -> Callable[[], None]:
        session = self.store.session(f"s-{length}")
        return lambda: session.append([user("q"), assistant("a")])  # new ids each time


class Raw:
    name = "raw psycopg"

    def __init__(self, url: str) -> None:
        self.connection = psycopg.connect(url)  # out of autocommit: BEGIN ... COMMIT
        self.connection.execute("CREATE TABLE raw_turns (session text NOT NULL,"
                                " seq bigserial, body jsonb NOT NULL,"
                                " PRIMARY KEY (session, seq))")
        self.connection.commit()

    def build(self, length: int) -> None:
        with self.connection.cursor() as cursor, cursor.copy(
                "COPY raw_turns (session, body) FROM STDIN") as copy:
            for i in range(length):
                copy.write_row((f"s-{length}", f'{{"role": "user", "text": "{text(i)}"}}'))
        self.connection.commit()

    def append(self, length: int) -> Callable[[], None]:
        session = f"s-{length}"
        pair = (session, Jsonb({"role": "user", "text": "q"}),
                session, Jsonb({"role": "assistant", "text": "a"}))

        def run() -> None:
            self.connection.execute("INSERT INTO raw_turns (session, body) VALUES"
                                    " (%s, %s), (%s, %s)", pair)
            self.connection.commit()
        return run


Contender = Ledger | Raw


def counters(monitor: psycopg.Connection[Any]) -> dict[str, float]:
    """The cluster's WAL position and its WAL syncs so far."""
    lsn, syncs = monitor.execute(
        "SELECT pg_current_wal_lsn() - '0/0', wal_sync FROM pg_stat_wal").fetchone() or (0, 0)
    return {"WAL bytes": float(lsn), "WAL syncs (pg_stat_wal, lags)": float(syncs)}


def server_cpu(monitor: psycopg.Connection[Any]) -> int:
    """Nanoseconds on a CPU so far of every client backend but the monitor's (the
    first field of ``/proc/<pid>/schedstat``: CPU time, not time waited for one)."""
    pids = monitor.execute("SELECT pid FROM pg_stat_activity WHERE backend_type ="
                           " 'client backend' AND pid <> pg_backend_pid()").fetchall()
    total = 0
    for (pid,) in pids:
        with contextlib.suppress(OSError):
            total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    return total


def records(monitor: psycopg.Connection[Any], start: float, end: float) -> list[tuple[str, int]]:
    """The WAL records written between two positions, by type (pg_walinspect)."""
    rows = monitor.execute(
        "SELECT \"resource_manager/record_type\", count FROM pg_get_wal_stats("
        "'0/0'::pg_lsn + %s::numeric, '0/0'::pg_lsn + %s::numeric, true)"
        " WHERE count > 0 ORDER BY count DESC", (int(start), int(end))).fetchall()
    return [(str(kind), int(count)) for kind, count in rows]


def statements(monitor: psycopg.Connection[Any]) -> list[tuple[str, int, float, float, int]]:
    """(query, calls, plan ms, exec ms, WAL bytes) of every statement since the reset."""
    rows = monitor.execute(
        "SELECT query, calls, total_plan_time, total_exec_time, wal_bytes"
        " FROM pg_stat_statements WHERE query NOT LIKE '%%pg_stat%%'"
        " AND query NOT LIKE '%%pg_current_wal_lsn%%'"
        " ORDER BY total_exec_time + total_plan_time DESC").fetchall()
    return [(q, int(c), float(p), float(e), int(w)) for q, c, p, e, w in rows]


def phase(contender: Contender, monitor: psycopg.Connection[Any], appends: int) -> None:
    """``appends`` appends at each length, then what they cost the server, per append."""
    runs = [contender.append(n) for n in LENGTHS]
    for run in runs:  # warm: connections, prepared statements, caches
        for _ in range(10):
            run()
    time.sleep(STATS_FLUSH)
    monitor.execute("SELECT pg_stat_statements_reset()")
    before = counters(monitor)
    server = server_cpu(monitor)
    cpu = time.process_time()
    for _ in range(appends // len(runs)):
        for run in runs:
            run()
    cpu = time.process_time() - cpu
    server = server_cpu(monitor) - server
    time.sleep(STATS_FLUSH)
    after = counters(monitor)
    print(f"\n{contender.name}: {appends:,} appends (half to each session)")
    print(f"  {'client CPU µs':<28}{cpu / appends * 1e6:>12,.1f}")
    print(f"  {'server CPU µs (backends)':<28}{server / appends / 1e3:>12,.1f}")
    for key in before:
        print(f"  {key:<28}{(after[key] - before[key]) / appends:>12,.2f}")
    print("  WAL records (pg_walinspect) per append:")
    for kind, count in records(monitor, before["WAL bytes"], after["WAL bytes"]):
        print(f"    {kind:<26}{count / appends:>12,.2f}")
    print(f"  {'statement':<60}{'calls':>7}{'plan µs':>10}{'exec µs':>10}{'WAL B':>8}")
    for query, calls, plan, execute, wal in statements(monitor):
        short = " ".join(query.split())[:58]
        print(f"  {short:<60}{calls / appends:>7.2f}{plan / calls * 1e3:>10.1f}"
              f"{execute / calls * 1e3:>10.1f}{wal / calls:>8.0f}")


def timed(contenders: list[Contender], rounds: int) -> None:
    """Wall and CPU per append, blocks interleaved across contenders and lengths."""
    walls: dict[str, list[float]] = {}
    cpus: dict[str, list[float]] = {}
    for _ in range(rounds):
        for contender in contenders:
            for n in LENGTHS:
                run = contender.append(n)
                gc.disable()
                wall, cpu = time.perf_counter(), time.process_time()
                for _ in range(BLOCK):
                    run()
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                gc.enable()
                walls.setdefault(contender.name, []).append(wall / BLOCK)
                cpus.setdefault(contender.name, []).append(cpu / BLOCK)
    print(f"\n{'interleaved blocks of ' + str(BLOCK):<28}{'wall µs':>12}{'CPU µs':>12}")
    for name, samples in walls.items():
        print(f"  {name:<26}{statistics.median(samples) * 1e6:>12,.1f}"
              f"{statistics.median(cpus[name]) * 1e6:>12,.1f}")
    ledger, raw = (statistics.median(walls[c.name]) for c in contenders)
    print(f"  chatledger / raw, wall: {ledger / raw:.2f}x (target <= 1.5x)")


def explained(ledger: Ledger, monitor: psycopg.Connection[Any]) -> None:
    """The plans of the append function's statements, as auto_explain logs them for one append."""
    log = Path(str((monitor.execute("SHOW data_directory").fetchone() or ("",))[0])).parent
    log = log / "server.log"
    offset = log.stat().st_size if log.exists() else 0
    for name, value in (("log_min_duration", "0"), ("log_analyze", "on"),
                        ("log_buffers", "on"), ("log_wal", "on"), ("log_timing", "on"),
                        ("log_nested_statements", "on")):
        monitor.execute(f"ALTER SYSTEM SET auto_explain.{name} = '{value}'")
    monitor.execute("SELECT pg_reload_conf()")
    time.sleep(STATS_FLUSH)
    ledger.append(LENGTHS[-1])()
    monitor.execute("ALTER SYSTEM SET auto_explain.log_min_duration = '-1'")
    monitor.execute("SELECT pg_reload_conf()")
    if not log.exists():
        print("\n(no server log to read the plan from)")
        return
    with log.open() as lines:
        lines.seek(offset)
        plans = lines.read().split("LOG:  duration:")
    nested = [p for p in plans if "PL/pgSQL function" in p]  # the function's statements
    print("\nthe append function's statements, as auto_explain logged them:")
    print("\n".join("LOG:  duration:" + p.rstrip() for p in nested) if nested else "(not logged)")


def main(argv: list[str] | None = None) -> int:
    appends, _ = parse_args(argv, __doc__, quick=200, full=1_000,
                            quick_help="200 appends each", check=False)
    with private_postgres(SETTINGS) as url, psycopg.connect(url, autocommit=True) as monitor:
        monitor.execute("CREATE EXTENSION pg_stat_statements")
        monitor.execute("CREATE EXTENSION pg_walinspect")
        version = (monitor.execute("SHOW server_version").fetchone() or ("?",))[0]
        print_header("chatledger on PostgreSQL: where an append's time goes",
                     [*environment(), ("postgres", f"PostgreSQL {version} (private cluster,"
                                       " fsync and synchronous_commit on)")])
        ledger, raw = Ledger(url), Raw(url)
        for contender in (ledger, raw):
            for n in LENGTHS:
                contender.build(n)
        monitor.execute("VACUUM ANALYZE")
        for contender in (ledger, raw):
            phase(contender, monitor, appends)
        timed([ledger, raw], max(5, appends // (BLOCK * len(LENGTHS))))
        explained(ledger, monitor)
    return 0


if __name__ == "__main__":
    sys.exit(main())
