"""What does one SQLite append cost next to a raw INSERT with the same durability?

An append is one user/assistant exchange (a 190-character question, a
440-character answer) stored with ``session.append`` on ``sqlite://`` (WAL,
``synchronous=FULL``: one ``fsync`` of the WAL per commit). The raw contender
inserts the same two messages, as ``json.dumps`` of their role and text, into
a two-column table of its own file, opened the same way: ``BEGIN IMMEDIATE``,
one ``executemany``, ``COMMIT``; no version, no idempotency index, no checks.
The two run interleaved, one append each per round, so a shared machine's
drift slows them alike. Reported: the median wall time and the median CPU time
of the calling thread (``time.thread_time``, which leaves out the wait for the
disk), and the ratio of each against the target of 1.2.

Run it from the repository root::

    python benchmarks/sqlite_append.py            # 500 appends each
    python benchmarks/sqlite_append.py --quick    # 100 appends each
    python benchmarks/sqlite_append.py --check    # exit 1 if the wall ratio misses 1.2
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _report import environment, print_header
from _report import parse_args as report_args

from chatledger import Session, assistant, open_store, user

TARGET = 1.2
QUESTION = "Where is my order? " * 10
ANSWER = "It shipped yesterday. " * 20


def raw_file(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    db.execute("CREATE TABLE messages (seq INTEGER PRIMARY KEY, body BLOB NOT NULL)")
    return db


def raw_append(db: sqlite3.Connection, seq: int) -> None:
    rows = [(seq, json.dumps({"role": "user", "content": QUESTION}).encode()),
            (seq + 1, json.dumps({"role": "assistant", "content": ANSWER}).encode())]
    db.execute("BEGIN IMMEDIATE")
    db.executemany("INSERT INTO messages VALUES (?, ?)", rows)
    db.execute("COMMIT")


def ledger_append(session: Session) -> None:
    session.append([user(QUESTION), assistant(ANSWER)])


def timed(samples: dict[str, list[int]], name: str, call: object, *args: object) -> None:
    wall, cpu = time.perf_counter_ns(), time.thread_time_ns()
    call(*args)  # type: ignore[operator]
    samples[f"{name} wall"].append(time.perf_counter_ns() - wall)
    samples[f"{name} cpu"].append(time.thread_time_ns() - cpu)


def run(appends: int, directory: Path) -> dict[str, list[int]]:
    samples: dict[str, list[int]] = {f"{n} {k}": [] for n in ("ledger", "raw")
                                     for k in ("wall", "cpu")}
    raw = raw_file(directory / "raw.db")
    with open_store(f"sqlite:///{directory}/ledger.db") as store:
        session = store.session("bench")
        ledger_append(session)  # the schema, the session and the connections exist
        raw_append(raw, 0)
        for n in range(appends):
            contenders = [("ledger", ledger_append, session), ("raw", raw_append, raw, 2 * n + 2)]
            for name, call, *args in contenders[:: 1 if n % 2 else -1]:
                timed(samples, name, call, *args)
    raw.close()
    return samples


def main(argv: list[str] | None = None) -> int:
    appends, check = report_args(argv, __doc__, quick_help="100 appends instead of 500",
                                 quick=100, full=500)
    print_header("SQLite: an append against a raw INSERT, synchronous=FULL",
                 [*environment(), ("appends", f"{appends} each, interleaved")])
    with tempfile.TemporaryDirectory() as directory:
        samples = run(appends, Path(directory))
    medians = {name: statistics.median(values) / 1_000 for name, values in samples.items()}
    print(f"{'':8}{'wall µs':>10}{'cpu µs':>10}")
    for name in ("ledger", "raw"):
        print(f"{name:8}{medians[f'{name} wall']:>10,.0f}{medians[f'{name} cpu']:>10,.0f}")
    wall = medians["ledger wall"] / medians["raw wall"]
    cpu = medians["ledger cpu"] / medians["raw cpu"]
    print(f"\nledger / raw, target <= {TARGET}x: wall {wall:.2f}x"
          f"{'' if wall <= TARGET else '  MISS'}, cpu {cpu:.2f}x")
    return 1 if check and wall > TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
