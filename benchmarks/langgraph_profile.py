"""Where does LedgerSaver's time go on a long chat thread? cProfile, by tottime.

Runs ``langgraph_steps``'s chat graph on ``LedgerSaver`` to ``--turns`` turns
(unprofiled), then profiles, separately:

- **get_tuple**: ``--calls`` calls of ``get_tuple`` for the thread's latest
  checkpoint, made directly;
- **step**: every ``put`` and ``put_writes`` LangGraph makes during ``--calls``
  more turns (the profiler is switched on inside each call, on the thread
  LangGraph runs it on; the calls are serialized so one profiler sees them all).

and prints the top ``--top`` functions of each by own time (tottime), with
the calls' mean wall time for scale. A report, not a test: it asserts nothing.

    python benchmarks/langgraph_profile.py                     # sqlite://, 1,000 turns
    python benchmarks/langgraph_profile.py --store redis --turns 100
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from _report import environment, print_header
from langgraph_steps import THREAD, USER_TEXT, chat_graph

from chatledger.langgraph import LedgerSaver
from chatledger.testing import RedisServer


class Profiled(LedgerSaver):
    """A LedgerSaver whose put and put_writes run under one profiler, when on."""

    def start_profiling(self) -> None:
        self.lock = threading.Lock()
        self.calls = 0
        self.spent_ns = 0
        self.profiler: cProfile.Profile | None = cProfile.Profile()

    def _profiled(self, call: Any, *args: Any) -> Any:
        profiler = getattr(self, "profiler", None)
        if profiler is None:
            return call(*args)
        with self.lock:
            started = time.perf_counter_ns()
            profiler.enable()
            try:
                return call(*args)
            finally:
                profiler.disable()
                self.spent_ns += time.perf_counter_ns() - started
                self.calls += 1

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return self._profiled(super().put, config, checkpoint, metadata, new_versions)

    def put_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
        self._profiled(super().put_writes, config, writes, task_id, task_path)


@contextmanager
def store_url(kind: str, workdir: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{workdir}/ledger.db"
        return
    with RedisServer() as server:
        yield server.url


def print_stats(title: str, profiler: cProfile.Profile, top: int) -> None:
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.strip_dirs().sort_stats("tottime").print_stats(top)
    text = out.getvalue()
    # Skip pstats' preamble up to the summary line; keep the summary and the table.
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if "function calls" in line), 0)
    print(title)
    print("\n".join(line for line in lines[first:] if line.strip() not in
                    ("Ordered by: internal time",) and not line.startswith("   List reduced")))
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", choices=("sqlite", "redis"), default="sqlite")
    parser.add_argument("--turns", type=int, default=1_000)
    parser.add_argument("--calls", type=int, default=20,
                        help="get_tuple calls, and turns whose steps are profiled")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        url = stack.enter_context(store_url(args.store, workdir))
        options = {"namespace": "bench"} if args.store == "redis" else {}
        saver = stack.enter_context(Profiled.from_url(url, **options))
        print_header(f"LedgerSaver on {args.store}:// at {args.turns:,} turns: cProfile by tottime",
                     [*environment(), ("store", url), ("calls", str(args.calls))])
        graph = chat_graph(saver)
        config = {"configurable": {"thread_id": THREAD}}
        started = time.monotonic()
        for _ in range(args.turns):
            graph.invoke({"messages": [("user", USER_TEXT)]}, config)
        print(f"({args.turns:,} turns built in {time.monotonic() - started:,.0f} s)\n")

        reads = cProfile.Profile()
        spent = 0
        for _ in range(args.calls):
            began = time.perf_counter_ns()
            reads.enable()
            saver.get_tuple(config)
            reads.disable()
            spent += time.perf_counter_ns() - began
        print_stats(f"get_tuple of the latest checkpoint: {args.calls} calls, "
                    f"mean {spent / args.calls / 1000:,.0f} µs (profiled)", reads, args.top)

        saver.start_profiling()
        steps = saver.profiler
        for _ in range(args.calls):
            graph.invoke({"messages": [("user", USER_TEXT)]}, config)
        saver.profiler = None
        print_stats(f"put and put_writes during {args.calls} turns: {saver.calls} calls, "
                    f"mean {saver.spent_ns / saver.calls / 1000:,.0f} µs (profiled)",
                    steps, args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
