"""How long does ``copy_items`` take per 1,000 items, from LangGraph's stores?

``--items`` items (default 1,000, a 200-character text each, one in ten with a
TTL) spread over ``--items // 50`` namespaces of one ``("users", <id>)`` tree,
in each source store, copied into a ``LedgerStore`` on ``sqlite://`` (a file in
a temporary directory). It reports the seconds of the copy and of the copy run
again (which stores nothing: one read per item on the target), each also per
1,000 items. Sources: ``InMemoryStore``, ``SqliteStore`` (a file) and
``PostgresStore`` on a private PostgreSQL cluster the script starts itself
(skipped with a note without the binaries). A report, not a test. Refuses to
run on a machine busier than its core count (``CHATLEDGER_BENCH_ALLOW_LOAD=1``:
it runs and marks the figures as noise).

    python benchmarks/copy_items.py               # 1,000 items
    python benchmarks/copy_items.py --items 200   # a quick look
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _postgres import postgres_missing, private_postgres
from _report import environment, print_header
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.store.sqlite import SqliteStore

from chatledger.langgraph import LedgerStore, copy_items

TEXT = "x" * 200


def fill(store: BaseStore, items: int) -> None:
    for n in range(items):
        ttl = 60.0 if n % 10 == 0 and store.supports_ttl else None
        store.put(("users", f"u{n % max(1, items // 50)}", "notes"), f"k{n}", {"text": TEXT},
                  ttl=ttl)


@contextmanager
def sources(folder: Path) -> Iterator[Iterator[tuple[str, BaseStore]]]:
    def each() -> Iterator[tuple[str, BaseStore]]:
        yield "InMemoryStore", InMemoryStore()
        with SqliteStore.from_conn_string(str(folder / "theirs.db")) as sqlite:
            sqlite.setup()
            yield "SqliteStore", sqlite
        missing = postgres_missing()
        if missing:
            print(f"PostgresStore: skipped ({missing})")
            return
        from langgraph.store.postgres import PostgresStore  # noqa: PLC0415

        with private_postgres() as url, PostgresStore.from_conn_string(url) as postgres:
            postgres.setup()
            yield "PostgresStore", postgres

    yield each()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1000)
    args = parser.parse_args()
    print_header("chatledger copy_items: seconds to copy and to copy again",
                 [*environment(), ("items", f"{args.items:,} in {max(1, args.items // 50)} "
                                            "namespaces, into LedgerStore on sqlite://")])
    print(f"{'source':<15}{'copy s':>9}{'per 1k':>9}{'again s':>9}{'per 1k':>9}")
    with tempfile.TemporaryDirectory() as directory, sources(Path(directory)) as found:
        for run, (name, source) in enumerate(found):
            fill(source, args.items)
            with LedgerStore.from_url(f"sqlite:///{directory}/ours{run}.db") as target:
                started = time.perf_counter()
                report = copy_items(source, target)
                copied = time.perf_counter() - started
                started = time.perf_counter()
                copy_items(source, target)
                again = time.perf_counter() - started
            per = 1000 / max(1, report.copied)
            print(f"{name:<15}{copied:>9.2f}{copied * per:>9.2f}{again:>9.2f}{again * per:>9.2f}")


if __name__ == "__main__":
    main()
