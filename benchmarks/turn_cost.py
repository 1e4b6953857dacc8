"""How much does one agent turn cost as the conversation grows?

A "turn" is what an agent does on every request: ``read(last=20)`` to build the
prompt, then ``append([user(...), assistant(...)])`` of one exchange. This script
times that turn with ``time.perf_counter_ns`` in sessions that already hold 10,
1,000, 10,000 and 100,000 messages, on ``memory://`` and on SQLite in a temporary
directory (the default ``synchronous=full``, which fsyncs every commit, and
``?synchronous=normal``). It prints the median and p90 per backend and length,
and for each backend the ratio median(100,000) / median(10) against the target
of 1.3: a turn should cost about the same whatever the history length.

The histories are built with batch appends of 1,000 messages. The timed turns
of one backend are interleaved across the lengths (one turn at each length per
round) so that drift over the run does not favour one length. Messages are
built before the clock starts. It is a measurement report, not a test: it exits
0 whether or not the target is met, unless ``--check`` asks it to exit 1 on a miss.

Run it from the repository root::

    python benchmarks/turn_cost.py            # 200 timed turns per length
    python benchmarks/turn_cost.py --quick    # 50 timed turns per length
    python benchmarks/turn_cost.py --check    # exit 1 if a ratio misses the target
"""

from __future__ import annotations

import sys
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from _report import environment, print_header
from _report import parse_args as report_args

from chatledger import Message, Session, Store, open_store
from chatledger._turn_cost import WINDOW, Row, conversation, fill, measure, session_turn

LENGTHS = (10, 1_000, 10_000, 100_000)
TARGET = 1.3


@dataclass(frozen=True)
class Config:
    """How many turns to time, and how many to run first to warm up."""

    turns: int
    warmup: int


def histories(messages: list[Message]) -> dict[int, list[Message]]:
    """Split ``messages`` into one disjoint history per length of ``LENGTHS``."""
    starts = [sum(LENGTHS[:i]) for i in range(len(LENGTHS))]
    return {n: messages[start : start + n] for n, start in zip(LENGTHS, starts, strict=True)}


def prepare(store: Store, history: dict[int, list[Message]]) -> dict[int, Session]:
    """One session per history length, filled with its history."""
    sessions = {length: store.session(f"len-{length}") for length in LENGTHS}
    for length, session in sessions.items():
        fill(session, history[length])
    return sessions


def measure_store(backend: str, sessions: dict[int, Session], config: Config) -> list[Row]:
    """Time ``config.turns`` turns at every history length of one store."""
    turns = {length: session_turn(session) for length, session in sessions.items()}
    return measure(backend, turns, timed=config.turns, warmup=config.warmup)


def urls(directory: Path) -> dict[str, str]:
    """The URLs of the stores to measure, by label."""
    return {
        "memory://": "memory://",
        "sqlite (synchronous=full)": f"sqlite:///{directory}/bench.db",
        "sqlite (synchronous=normal)": f"sqlite:///{directory}/bench-normal.db?synchronous=normal",
    }


def run(config: Config) -> list[Row]:
    """Fill every store, then measure them one after the other.

    The history messages are built once, appended to every store, and dropped
    before the clock starts so that they do not weigh on the garbage collector.
    The SQLite files live in a temporary directory that is removed at the end.
    """
    with tempfile.TemporaryDirectory(prefix="chatledger-bench-") as name, ExitStack() as stack:
        opened = {
            label: stack.enter_context(open_store(url)) for label, url in urls(Path(name)).items()
        }
        history = histories(conversation(sum(LENGTHS)))
        sessions = {label: prepare(store, history) for label, store in opened.items()}
        del history
        return [row for label in opened for row in measure_store(label, sessions[label], config)]


def print_config_header(config: Config) -> None:
    turns = (
        f"{config.turns} timed per length after {config.warmup} warm-up turns;\n"
        "each turn adds 2 messages, so a history grows by at most\n"
        f"{2 * (config.warmup + config.turns)} messages while it is measured"
    )
    print_header(
        f"chatledger turn cost: read(last={WINDOW}) + append(1 user/assistant pair)",
        [*environment(), ("turns", turns)],
    )


def print_table(rows: list[Row]) -> None:
    print(f"{'backend':<29} {'history':>9} {'median µs':>11} {'p90 µs':>11}")
    print("-" * 63)
    for row in rows:
        print(f"{row.contender:<29} {row.length:>9,} {row.median_us:>11,.1f} {row.p90_us:>11,.1f}")
    print()


def print_ratios(rows: list[Row]) -> bool:
    """Print each backend's ratio against the target; return whether all meet it."""
    met = True
    short, long = LENGTHS[0], LENGTHS[-1]
    print(f"median({long:,}) / median({short:,}), target ≤ {TARGET}:")
    medians = {(row.contender, row.length): row.median_us for row in rows}
    for backend in dict.fromkeys(row.contender for row in rows):
        ratio = medians[backend, long] / medians[backend, short]
        verdict = "PASS" if ratio <= TARGET else "MISS"
        met = met and ratio <= TARGET
        print(f"  {backend:<29} {ratio:>6.2f}  {verdict}")
    return met


def parse_args(argv: list[str] | None) -> tuple[Config, bool]:
    return report_args(argv, __doc__, quick_help="50 timed turns instead of 200",
                       quick=Config(turns=50, warmup=10), full=Config(turns=200, warmup=20))


def main(argv: list[str] | None = None) -> int:
    config, check = parse_args(argv)
    print_config_header(config)
    rows = run(config)
    print_table(rows)
    met = print_ratios(rows)
    return 1 if check and not met else 0


if __name__ == "__main__":
    sys.exit(main())
