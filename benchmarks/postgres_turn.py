"""What does one agent turn cost on PostgreSQL: chatledger against the usual alternatives?

A "turn" is what an agent does on every request: read the last 20 messages to
build the prompt, then store one user/assistant pair. This script times turns
with ``time.perf_counter_ns``, in one process, against one private PostgreSQL
cluster it starts itself (``_postgres.private_postgres``: PostgreSQL's defaults,
``fsync`` and ``synchronous_commit`` on), for three contenders:

- chatledger on ``postgresql://``: ``session.read(last=20)`` then
  ``session.append([user, assistant])``;
- langchain-postgres's ``PostgresChatMessageHistory``: ``.messages`` (it selects
  and parses the whole session: that is the point of the comparison), then
  ``add_messages([HumanMessage, AIMessage])``;
- raw psycopg on a table ``(session, seq bigserial, body jsonb)`` keyed by
  ``(session, seq)``: one ``SELECT ... ORDER BY seq DESC LIMIT 20`` and one
  ``INSERT`` of the two rows, in autocommit.

The write alone is timed too, in the same rounds: chatledger's
``session.append([user, assistant])`` against raw psycopg's ``BEGIN; INSERT;
COMMIT`` of the same two rows (a connection out of autocommit: psycopg sends
``BEGIN`` with the ``INSERT``, then ``COMMIT``), the target being at most 1.5x.

History lengths are 10, 10,000 and 1,000,000 messages (``--quick``: 10 and
10,000); PostgresChatMessageHistory runs at 10 and 10,000 only (one turn at
1,000,000 reads a million rows). Histories are built before any clock runs
(chatledger in appends of 5,000, the other two with COPY, the history's rows as
its own ``add_messages`` writes them), and after each timed turn its two
messages are removed off the clock (``trim``, ``DELETE``), so each history holds
exactly N messages whenever it is timed. Rounds are interleaved across lengths.
It is a measurement report, not a test: it exits 0 whether or not the targets
(printed with the ratios) are met.

    python benchmarks/postgres_turn.py            # 100 rounds (the history: 20 / 5)
    python benchmarks/postgres_turn.py --quick    # 30 rounds, 10 and 10,000 messages
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import psycopg
from _postgres import private_postgres
from _report import environment, median_us, p90_us, print_header
from langchain_core.messages import AIMessage, HumanMessage, message_to_dict
from langchain_postgres import PostgresChatMessageHistory
from psycopg.types.json import Jsonb

from chatledger import Session, assistant, open_store, user

BUILD_BATCH = 5_000
TABLE = "chat_history"


@dataclass
class Cell:
    contender: str
    length: int
    samples: list[int] = field(default_factory=list)


def text(i: int) -> str:
    return f"message {i}: " + "lorem ipsum dolor sit amet " * 3


class Ledger:
    name = "chatledger"

    def __init__(self, url: str) -> None:
        self.store = open_store(f"{url}?migrate=true", namespace="bench")
        self.sessions: dict[int, Session] = {}

    def build(self, length: int) -> None:
        session = self.sessions[length] = self.store.session(f"s-{length}")
        for start in range(0, length, BUILD_BATCH):
            batch = [user(text(i)) for i in range(start, min(length, start + BUILD_BATCH))]
            session.append(batch)

    def turn(self, length: int) -> Callable[[], None]:
        session = self.sessions[length]
        pair = [user("q"), assistant("a")]

        def run() -> None:
            assert len(session.read(last=20).messages) == min(20, length)
            session.append(pair)
        return run

    def append(self, length: int) -> Callable[[], None]:
        session = self.sessions[length]
        pair = [user("q"), assistant("a")]

        def run() -> None:
            session.append(pair)
        return run

    def reset(self, length: int) -> None:
        self.sessions[length].trim(keep_last=length)


class History:
    name = "PostgresChatMessageHistory"

    def __init__(self, url: str) -> None:
        self.connection = psycopg.connect(url)
        PostgresChatMessageHistory.create_tables(self.connection, TABLE)
        self.ids: dict[int, str] = {}

    def build(self, length: int) -> None:
        session = self.ids[length] = str(uuid.uuid4())
        with self.connection.cursor() as cursor, cursor.copy(
                f"COPY {TABLE} (session_id, message) FROM STDIN") as copy:
            for i in range(length):
                copy.write_row((session, json.dumps(message_to_dict(HumanMessage(text(i))))))
        self.connection.commit()
        history = PostgresChatMessageHistory(TABLE, session, sync_connection=self.connection)
        assert len(history.messages) == length

    def turn(self, length: int) -> Callable[[], None]:
        history = PostgresChatMessageHistory(TABLE, self.ids[length],
                                             sync_connection=self.connection)
        pair = [HumanMessage("q"), AIMessage("a")]

        def run() -> None:
            assert len(history.messages[-20:]) == min(20, length)
            history.add_messages(pair)
        return run

    def reset(self, length: int) -> None:
        self.connection.execute(
            f"DELETE FROM {TABLE} WHERE id IN (SELECT id FROM {TABLE} WHERE session_id = %s"
            " ORDER BY id DESC LIMIT 2)", (self.ids[length],))
        self.connection.commit()


class Raw:
    name = "raw psycopg"

    def __init__(self, url: str) -> None:
        self.connection = psycopg.connect(url, autocommit=True)
        self.transactions = psycopg.connect(url)  # out of autocommit: BEGIN ... COMMIT
        self.connection.execute("CREATE TABLE raw_turns (session text NOT NULL,"
                                " seq bigserial, body jsonb NOT NULL, PRIMARY KEY (session, seq))")

    def build(self, length: int) -> None:
        with self.connection.cursor() as cursor, cursor.copy(
                "COPY raw_turns (session, body) FROM STDIN") as copy:
            for i in range(length):
                copy.write_row((f"s-{length}", json.dumps({"role": "user", "text": text(i)})))

    def turn(self, length: int) -> Callable[[], None]:
        session = f"s-{length}"
        pair = (session, Jsonb({"role": "user", "text": "q"}),
                session, Jsonb({"role": "assistant", "text": "a"}))

        def run() -> None:
            rows = self.connection.execute(
                "SELECT body FROM raw_turns WHERE session = %s ORDER BY seq DESC LIMIT 20",
                (session,)).fetchall()
            assert len(rows) == min(20, length)
            self.connection.execute("INSERT INTO raw_turns (session, body) VALUES"
                                    " (%s, %s), (%s, %s)", pair)
        return run

    def append(self, length: int) -> Callable[[], None]:
        session = f"s-{length}"
        pair = (session, Jsonb({"role": "user", "text": "q"}),
                session, Jsonb({"role": "assistant", "text": "a"}))

        def run() -> None:  # BEGIN; INSERT; COMMIT
            self.transactions.execute("INSERT INTO raw_turns (session, body) VALUES"
                                      " (%s, %s), (%s, %s)", pair)
            self.transactions.commit()
        return run

    def reset(self, length: int) -> None:
        self.connection.execute(
            "DELETE FROM raw_turns WHERE (session, seq) IN (SELECT session, seq FROM raw_turns"
            " WHERE session = %s ORDER BY seq DESC LIMIT 2)", (f"s-{length}",))


def measure(url: str, lengths: list[int], rounds: int) -> list[Cell]:
    contenders = [Ledger(url), Raw(url), History(url)]
    history_lengths = [n for n in lengths if n <= 10_000]
    plan = {c.name: history_lengths if isinstance(c, History) else lengths for c in contenders}
    for contender in contenders:
        for length in plan[contender.name]:
            started = time.monotonic()
            contender.build(length)  # type: ignore[attr-defined]
            print(f"built {contender.name} at {length:,} in {time.monotonic() - started:.1f} s",
                  file=sys.stderr)
    cells = {(c.name, n): Cell(c.name, n) for c in contenders for n in plan[c.name]}
    cells.update({(f"{c.name} append", n): Cell(f"{c.name} append", n)
                  for c in contenders if not isinstance(c, History) for n in plan[c.name]})
    for round_ in range(rounds):
        for contender in contenders:
            for length in plan[contender.name]:
                if isinstance(contender, History) and round_ >= _history_rounds(length, rounds):
                    continue
                _timed(contender.turn(length), cells[contender.name, length])  # type: ignore[attr-defined]
                contender.reset(length)  # type: ignore[attr-defined]
                if not isinstance(contender, History):
                    _timed(contender.append(length),  # type: ignore[attr-defined]
                           cells[f"{contender.name} append", length])
                    contender.reset(length)  # type: ignore[attr-defined]
    return list(cells.values())


def _timed(run: Callable[[], None], cell: Cell) -> None:
    gc.disable()
    started = time.perf_counter_ns()
    run()
    cell.samples.append(time.perf_counter_ns() - started)
    gc.enable()


def _history_rounds(length: int, rounds: int) -> int:
    return max(5, rounds // 5) if length <= 10 else max(5, rounds // 20)


def report(cells: list[Cell]) -> None:
    print(f"{'contender':<28}{'messages':>10}{'turns':>7}{'median µs':>12}{'p90 µs':>12}")
    for cell in cells:
        print(f"{cell.contender:<28}{cell.length:>10,}{len(cell.samples):>7}"
              f"{median_us(cell.samples):>12,.1f}{p90_us(cell.samples):>12,.1f}")
    turn = {(c.contender, c.length): median_us(c.samples) for c in cells}
    lengths = sorted({c.length for c in cells})
    longest = lengths[-1]
    print()
    _ratio(f"chatledger {longest:,} / 10 (flat)", turn["chatledger", longest]
           / turn["chatledger", 10], 1.3, at_most=True)
    for n in lengths:
        _ratio(f"chatledger / raw psycopg at {n:,}", turn["chatledger", n]
               / turn["raw psycopg", n], 1.5, at_most=True)
    for n in lengths:
        _ratio(f"chatledger append / BEGIN; INSERT; COMMIT at {n:,}",
               turn["chatledger append", n] / turn["raw psycopg append", n], 1.5, at_most=True)
    for n, target in ((10, 1.0), (10_000, 100.0)):
        if ("PostgresChatMessageHistory", n) in turn:
            _ratio(f"PostgresChatMessageHistory / chatledger at {n:,}",
                   turn["PostgresChatMessageHistory", n] / turn["chatledger", n], target,
                   at_most=False)


def _ratio(label: str, ratio: float, target: float, *, at_most: bool) -> None:
    met = ratio <= target if at_most else ratio > target
    sign = "<=" if at_most else ">"
    print(f"{label:<48}{ratio:>9.2f}x  (target {sign} {target:g}x: "
          f"{'met' if met else 'NOT met'})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="30 rounds; 10 and 10,000 only")
    args = parser.parse_args(argv)
    lengths = [10, 10_000] if args.quick else [10, 10_000, 1_000_000]
    rounds = 30 if args.quick else 100
    with private_postgres() as url:
        with psycopg.connect(url) as connection:
            version = connection.execute("SHOW server_version").fetchone()
        print_header("chatledger on PostgreSQL: one turn (read the last 20, append a pair)",
                     [*environment(), ("postgres", f"PostgreSQL {version[0] if version else '?'}"
                                       " (private cluster, fsync and synchronous_commit on)")])
        report(measure(url, lengths, rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
