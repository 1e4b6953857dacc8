"""Client instructions per put, put_writes and get_tuple, per checkpointer (callgrind).

Repeatable where CPU time is not: each call LangGraph makes on the saver runs
inside a small C function that switches valgrind's instruction counting on for
its own thread and dumps the count when it returns, so only the call's work is
counted (the server's, another process, is not). The thread is built to
``--turns`` turns first, outside valgrind; then, under ``valgrind
--tool=callgrind``, 2 more turns warm the process and ``--rounds`` turns are
measured. Needs valgrind, its headers and a C compiler. A report, not a test.

    python benchmarks/langgraph_instructions.py --saver ours-postgres --turns 10
    python benchmarks/langgraph_instructions.py --saver PostgresSaver --turns 100
"""

from __future__ import annotations

import argparse
import ctypes
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import psycopg
from _postgres import private_postgres
from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph_steps import USER_TEXT, chat_graph
from psycopg.rows import dict_row

from chatledger.langgraph import LedgerSaver

SAVERS = ("ours-postgres", "PostgresSaver", "ours-sqlite", "SqliteSaver")
CALLS = ("put", "put_writes", "get_tuple")
HELPER = r"""
#include <valgrind/callgrind.h>
int counted(int (*call)(void), const char *name) {
    CALLGRIND_TOGGLE_COLLECT; int r = call(); CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS_AT(name); return r;
}
"""


def counting(library: str) -> Callable[[str, Callable[[], Any]], Any]:
    """``run(name, call)``: ``call()`` counted, and dumped as ``name``; one at a time."""
    helper = ctypes.PyDLL(library)
    callback = ctypes.CFUNCTYPE(ctypes.c_int)
    helper.counted.argtypes = [callback, ctypes.c_char_p]
    lock = threading.Lock()

    def run(name: str, call: Callable[[], Any]) -> Any:
        box: dict[str, Any] = {}

        def body() -> int:
            try:
                box["result"] = call()
            except BaseException as exc:  # raised again outside the C frame
                box["error"] = exc
            return 0

        with lock:
            helper.counted(callback(body), name.encode())
        if "error" in box:
            raise box["error"]
        return box.get("result")

    return run


def measured(base: type, run: Callable[[str, Callable[[], Any]], Any] | None) -> type:
    """``base`` with put, put_writes and get_tuple (of the latest) counted, once on."""

    class Measured(base):  # type: ignore[valid-type,misc]
        on = False

        def _counted(self, name: str, call: Callable[[], Any]) -> Any:
            return run(name, call) if self.on and run is not None else call()

        def put(self, *args: Any) -> Any:
            return self._counted("put", lambda: super(Measured, self).put(*args))

        def put_writes(self, *args: Any) -> Any:
            return self._counted("put_writes", lambda: super(Measured, self).put_writes(*args))

        def get_tuple(self, config: Any) -> Any:
            if config["configurable"].get("checkpoint_id"):
                return super().get_tuple(config)
            return self._counted("get_tuple", lambda: super(Measured, self).get_tuple(config))

    return Measured


@contextmanager
def opened(saver: str, where: str, run: Callable[[str, Callable[[], Any]], Any] | None,
           ) -> Iterator[Any]:
    with ExitStack() as stack:
        if saver == "PostgresSaver":
            conn = stack.enter_context(psycopg.Connection.connect(
                where, autocommit=True, prepare_threshold=0, row_factory=dict_row))
            theirs = measured(PostgresSaver, run)(conn)
            theirs.setup()
            yield theirs
        elif saver == "SqliteSaver":
            connection = sqlite3.connect(f"{where}/langgraph.db", check_same_thread=False)
            stack.callback(connection.close)
            yield measured(SqliteSaver, run)(connection)
        else:
            url = f"{where}?migrate=true" if saver == "ours-postgres" else (
                f"sqlite:///{where}/ledger.db")
            yield stack.enter_context(measured(LedgerSaver, run).from_url(url, namespace="bench"))


def child(args: argparse.Namespace) -> int:
    """Build the thread (no library), or warm and measure it (``--library``)."""
    run = counting(args.library) if args.library else None
    with opened(args.saver, args.where, run) as saver:
        graph = chat_graph(saver)
        config = {"configurable": {"thread_id": "bench"}}
        for _ in range(args.turns if run is None else 2):
            graph.invoke({"messages": [("user", USER_TEXT)]}, config)
        if run is not None:
            saver.on = True
            for _ in range(args.rounds):
                graph.invoke({"messages": [("user", USER_TEXT)]}, config)
    return 0


def counts(directory: Path) -> dict[str, list[int]]:
    """Instructions of each dumped call, by call."""
    found: dict[str, list[int]] = defaultdict(list)
    for dump in directory.glob("callgrind.out.*"):
        text = dump.read_text()
        name = re.search(r"^desc: Trigger: Client Request: (\S+)", text, re.M)
        total = re.search(r"^(?:totals|summary): (\d+)", text, re.M)
        if name and total:
            found[name.group(1)].append(int(total.group(1)))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--saver", choices=SAVERS, default="ours-postgres")
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=10, help="turns measured")
    parser.add_argument("--where", help=argparse.SUPPRESS)  # the child's database
    parser.add_argument("--library", help=argparse.SUPPRESS)  # the child's helper
    args = parser.parse_args(argv)
    if args.where:
        return child(args)
    with ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        library = work / "counted.so"
        subprocess.run(["cc", "-O0", "-shared", "-fPIC", "-o", str(library), "-x", "c", "-"],
                       input=HELPER.encode(), check=True)
        if args.saver.endswith("postgres") or args.saver == "PostgresSaver":
            where = stack.enter_context(private_postgres())
        else:
            where = str(work)
        me = [sys.executable, __file__, "--saver", args.saver, "--turns", str(args.turns),
              "--rounds", str(args.rounds), "--where", where]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}
        subprocess.run(me, check=True, env=env)
        dumps = work / "dumps"
        dumps.mkdir()
        subprocess.run(["valgrind", "--tool=callgrind", "--collect-atstart=no",
                        f"--callgrind-out-file={dumps}/callgrind.out", *me,
                        "--library", str(library)], check=True, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        found = counts(dumps)
    cells = "  ".join(f"{call} {sum(found[call]) // len(found[call]):>11,} ({len(found[call])})"
                      for call in CALLS if found.get(call))
    print(f"{args.saver:<14}{args.turns:>6,} turns  {cells}  instructions per call (calls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
