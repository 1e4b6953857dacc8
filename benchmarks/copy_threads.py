"""How long does ``copy_threads`` take per 1,000 checkpoints, from each LangGraph saver?

Two shapes of data on every source saver, each copied into a ``LedgerSaver``
on ``sqlite://`` (a file in a temporary directory):

- **one long thread**: ``--turns`` turns (default 1,000) of a chat whose
  ``messages`` channel grows by one 200-character exchange per turn (a
  100-character user message, a 100-character reply); a turn is three
  checkpoints (LangGraph's input, loop and node steps);
- **many short threads**: ``--turns // 10`` threads of 10 turns each, the same
  number of checkpoints in all.

For each it reports the checkpoints, the seconds of the copy, of the copy run
again (which stores nothing), and of ``compare_threads`` (the verification
pass of ``chatledger migrate --from-langgraph``), each also per 1,000
checkpoints. A long thread costs more per checkpoint: every checkpoint a
source lists or returns holds the whole conversation so far, and the copy
reads each one twice (its listing, then the checkpoint itself) and lists the
thread once more to see whether it changed.

Sources: LangGraph's ``InMemorySaver``, ``SqliteSaver`` (a file) and
``PostgresSaver`` on a private PostgreSQL cluster the script starts itself
(``_postgres.py``; skipped with a note without the binaries). A report, not a
test: it asserts nothing. Like the other benchmarks it refuses to run on a
machine busier than its core count (``CHATLEDGER_BENCH_ALLOW_LOAD=1``: it runs
and marks the figures as noise).

    python benchmarks/copy_threads.py               # 1,000 turns
    python benchmarks/copy_threads.py --turns 100   # a quick look
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _postgres import postgres_missing, private_postgres
from _report import environment, print_header
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph

from chatledger.langgraph import LedgerSaver, compare_threads, copy_threads

TEXT = "x" * 100


def chat(checkpointer: Any) -> Any:
    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(TEXT)]}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_edge(START, "reply")
    return builder.compile(checkpointer=checkpointer)


def write(saver: Any, threads: int, turns: int) -> list[str]:
    graph = chat(saver)
    ids = [f"thread-{n}" for n in range(threads)]
    for thread_id in ids:
        for _ in range(turns):
            graph.invoke({"messages": [HumanMessage(TEXT)]},
                         {"configurable": {"thread_id": thread_id}})
    return ids


@contextmanager
def sqlite_saver(directory: Path) -> Iterator[Any]:
    with SqliteSaver.from_conn_string(str(directory / f"lg-{time.monotonic_ns()}.db")) as saver:
        yield saver


@contextmanager
def postgres_saver(url: str) -> Iterator[Any]:
    import psycopg  # noqa: PLC0415
    from langgraph.checkpoint.postgres import PostgresSaver  # noqa: PLC0415

    database = f"lg_{time.monotonic_ns()}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    with PostgresSaver.from_conn_string(url.rsplit("/", 1)[0] + f"/{database}") as saver:
        saver.setup()
        yield saver


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = run()
    return time.perf_counter() - started, result


def measure(name: str, opened: Callable[[], Any], shape: str, threads: int, turns: int, *,
            directory: Path) -> None:
    with opened() as source:
        ids = write(source, threads, turns)
        with LedgerSaver.from_url(f"sqlite:///{directory}/ledger-{time.monotonic_ns()}.db"
                                  ) as target:
            copy_s, report = timed(lambda: copy_threads(source, target, thread_ids=ids))
            again_s, _ = timed(lambda: copy_threads(source, target, thread_ids=ids))
            verify_s, found = timed(lambda: compare_threads(source, target, thread_ids=ids))
    assert report.ok and not found, (report.summary(), found[:3])
    per = 1000 / report.checkpoints
    print(f"| {name} | {shape} | {report.checkpoints:,} | {copy_s:.1f} ({copy_s * per:.1f}) | "
          f"{again_s:.1f} ({again_s * per:.1f}) | {verify_s:.1f} ({verify_s * per:.1f}) |",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turns", type=int, default=1000)
    args = parser.parse_args()
    print_header("chatledger copy_threads: seconds to copy, copy again and verify",
                 [*environment(), ("turns", f"{args.turns:,} in one thread, and in threads "
                                            "of 10")])
    print("| source | threads | checkpoints | copy s (per 1,000) | again s (per 1,000) | "
          "verify s (per 1,000) |")
    print("|---|---|---:|---:|---:|---:|")
    short = max(1, args.turns // 10)
    shapes = [(f"1 of {args.turns} turns", 1, args.turns), (f"{short} of 10 turns", short, 10)]
    with tempfile.TemporaryDirectory() as tmp, contextlib_postgres() as pg_url:
        directory = Path(tmp)
        sources: list[tuple[str, Callable[[], Any]]] = [
            ("InMemorySaver", lambda: _nullcontext(InMemorySaver())),
            ("SqliteSaver", lambda: sqlite_saver(directory)),
        ]
        if pg_url is not None:
            sources.append(("PostgresSaver", lambda: postgres_saver(pg_url)))
        for name, opened in sources:
            for shape, threads, turns in shapes:
                measure(name, opened, shape, threads, turns, directory=directory)


@contextmanager
def _nullcontext(value: Any) -> Iterator[Any]:
    yield value


@contextmanager
def contextlib_postgres() -> Iterator[str | None]:
    missing = postgres_missing()
    if missing is not None:
        print(f"(PostgresSaver skipped: {missing})", file=sys.stderr)
        yield None
        return
    with private_postgres() as url:
        yield url


if __name__ == "__main__":
    main()
