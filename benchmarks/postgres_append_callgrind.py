"""The PostgreSQL append function's server work per call, in instructions.

Time on a shared machine moves with its load (``postgres_append_profile.py``); an
instruction count does not. On a private cluster (``_postgres``) the schema is created
and sessions written; then the function runs in single-user mode (``postgres --single``,
``fsync=off``) under ``valgrind --tool=callgrind --toggle-collect=ExecMakeTableFunctionResult``:
what is counted is the function's call (the ``SET`` of its plan_cache_mode, the lock, the
lookups, the writes, the executor's set-up of each statement), not the parse of the call
nor the commit. Per call:
(a run of ``long`` calls - a run of ``short``) / (``long`` - ``short``), which cancels the
first call's planning. Each call writes one 120-byte entry and its id, to a new session
or to one of ten sessions of 200 entries; then a pair to those sessions (LangGraph's
``put_writes``). Every call must write, or the script stops.

    python benchmarks/postgres_append_callgrind.py          # runs of 40 and 120 calls
    python benchmarks/postgres_append_callgrind.py --quick  # 10 and 30
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import psycopg
from _postgres import _as_postgres, _bin_dir, _run, postgres_missing
from _report import parse_args, print_header

from chatledger import open_store
from chatledger.testing import free_port

SCHEMA = "chatledger"
CASES = {"new session": 1, "200 entries": 1, "200 entries, a pair": 2}
PRESENT = 200  # entries of each existing session
SESSIONS = 10
TOGGLE = "ExecMakeTableFunctionResult"
BODY = "'\\x" + "78" * 120 + "'::bytea"


def _sid(case: str, run: int, i: int) -> str:
    return f"{case}/{run}/{i}"


def _calls(case: str, run: int, count: int) -> str:
    """``count`` calls of the function in ``case``, as single-user mode reads them."""
    size = CASES[case]
    lines = []
    for i in range(count):
        ids = ", ".join(f"'\\x{uuid.uuid4().hex.encode().hex()}'::bytea" for _ in range(size))
        bodies = ", ".join([BODY] * size)
        if case == "new session":
            sid, was = _sid(case, run, i), None
        else:
            sid, was = _sid(case, run, i % SESSIONS), PRESENT + size * (i // SESSIONS)
        first = 1 if was is None else was + 1
        lines.append(
            f"SELECT * FROM {SCHEMA}.append('', '{sid}', ARRAY[{ids}], true,"
            f" {'NULL' if was is None else was}, 'L', NULL, 2.0, ARRAY[{bodies}], {first},"
            f" {first + size - 1}, 1, 2.0, NULL);")
    return "\n".join(lines) + "\n"


def _prepare(url: str, runs: tuple[int, int]) -> None:
    """The schema and the existing sessions."""
    open_store(f"{url}?migrate=true").close()
    with psycopg.connect(url, autocommit=True) as connection:
        for case in list(CASES)[1:]:
            for run in runs:
                for i in range(SESSIONS):
                    ids = [uuid.uuid4().hex.encode() for _ in range(PRESENT)]
                    connection.execute(
                        f"SELECT * FROM {SCHEMA}.append('', %s, %b, true, NULL, 'L', NULL,"
                        " 1.0, %b, 1, %s, 1, 1.0, NULL)",
                        (_sid(case, run, i), ids, [b"x" * 120] * PRESENT, PRESENT))


def _count(data: Path, out: Path, calls: str, expected: int) -> int:
    """Instructions inside the PL/pgSQL function over ``calls``, each of which must write."""
    postgres = _bin_dir()
    assert postgres is not None
    done = subprocess.run(_as_postgres([
        "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
        f"--toggle-collect={TOGGLE}", str(postgres / "postgres"), "--single",
        "-D", str(data), "-c", "fsync=off", "postgres"]),
        input=calls, capture_output=True, text=True, check=False)
    written = done.stdout.count('written = "t"')
    if written != expected:
        sys.exit(f"{written} of {expected} calls wrote:\n"
                 f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    found = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
    assert found is not None, f"no total in {out}"
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    runs, _ = parse_args(argv, __doc__, quick=(10, 30), full=(40, 120),
                         quick_help="runs of 10 and 30 calls", check=False)
    missing = postgres_missing() or (None if shutil.which("valgrind") else "no valgrind")
    if missing:
        print(f"skipped: {missing}")
        return 0
    postgres = _bin_dir()
    assert postgres is not None
    version = subprocess.run([str(postgres / "postgres"), "--version"], capture_output=True,
                             text=True, check=False).stdout.strip()
    print_header("chatledger on PostgreSQL: the append function's instructions per call",
                 [("platform", platform.platform()), ("postgres", version),
                  ("runs", f"{runs[0]} and {runs[1]} calls, single-user, fsync=off"
                           " (instructions: the machine's load does not matter)")])
    base = Path(tempfile.mkdtemp(prefix="chatledger-bench-cg-"))
    try:
        if os.geteuid() == 0:  # initdb runs as postgres (_postgres._as_postgres)
            shutil.chown(base, user="postgres")
        data = base / "data"
        _run([str(postgres / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
              "-E", "UTF8", "--no-sync"])
        port = free_port()
        _run([str(postgres / "pg_ctl"), "-D", str(data), "-l", str(base / "log"), "-w", "-o",
              f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories={base}",
              "start"])
        try:
            _prepare(f"postgresql://postgres@127.0.0.1:{port}/postgres", runs)
        finally:
            _run([str(postgres / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"])
        print(f"\n  {'case':<24}{'per call':>12}")
        for case in CASES:
            short, long = (_count(data, base / f"cg.{run}", _calls(case, run, run), run)
                           for run in runs)
            print(f"  {case:<24}{(long - short) / (runs[1] - runs[0]) / 1000:>11.1f}k")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
