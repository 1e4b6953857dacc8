"""What do reads that fit a token budget cost?

Two measurements, on ``memory://``, on SQLite (``synchronous=normal``) in a
temporary directory, on a private ``redis-server`` the script starts
(``chatledger.testing.RedisServer``: no snapshots, no AOF) and on a private
PostgreSQL cluster it starts (``_postgres.private_postgres``; left out, with
the reason printed, where ``initdb`` is missing or ``--no-postgres``):

1. ``read(max_tokens=...)`` (the default approximate counter) in sessions of
   10, 1,000 and 100,000 messages of a support conversation (user and
   assistant turns, one tool call and its result every fourth turn): with a
   budget of 100 tokens (fewer than 10 messages hold) and of 2,000 (about 130
   messages, more than 10 hold). Target: the median at 100,000 at most 1.3
   times the median at the shortest length that fills the window (10, then
   1,000): pages are read from the newest end, so the history's length should
   not matter.
2. ``read(with_summary=True)`` on a session of 100,000 messages that
   ``maybe_compact`` keeps short, against a plain ``read(last=N)`` of the same
   messages (N = the summary and the window after it). Target: at most 1.2x.

Reads of one measurement are interleaved round by round so that drift favours
neither side. It prints medians, p90 and the ratios; it asserts nothing.

Run it from the repository root::

    python benchmarks/context_fits.py            # 300 timed reads per case
    python benchmarks/context_fits.py --quick    # 60
    python benchmarks/context_fits.py --only redis,postgres
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from _postgres import postgres_missing, private_postgres
from _report import environment, median_us, p90_us, print_header

from chatledger import Message, Session, Store, assistant, open_store, tool, user
from chatledger.testing import RedisServer

BUDGET = 2_000
LENGTHS = (10, 1_000, 100_000)
FLAT_TARGET = 1.3
SUMMARY_TARGET = 1.2


def conversation(length: int) -> list[Message]:
    """``length`` messages of a support conversation with tool calls."""
    messages: list[Message] = []
    turn = 0
    while len(messages) < length:
        messages.append(user(f"Where is order {turn}? It was due on Tuesday."))
        if turn % 4 == 3:
            call = f"call-{turn}"
            messages += [assistant("", tool_calls=[{"id": call, "name": "track",
                                                     "args": {"order": turn}}]),
                         tool(f'{{"order": {turn}, "status": "shipped"}}', tool_call_id=call)]
        messages.append(assistant(f"Order {turn} shipped yesterday; it arrives tomorrow."))
        turn += 1
    return _whole(messages[:length])


def _whole(messages: list[Message]) -> list[Message]:
    """Drop a trailing tool call left without its result by the cut to length."""
    while messages and messages[-1].tool_calls:
        messages.pop()
    return messages


def fill(session: Session, messages: list[Message]) -> None:
    for start in range(0, len(messages), 1_000):
        session.append(messages[start:start + 1_000])


def timed(read: Callable[[], object]) -> int:
    start = time.perf_counter_ns()
    read()
    return time.perf_counter_ns() - start


def interleaved(reads: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[int]]:
    samples: dict[str, list[int]] = {name: [] for name in reads}
    for _ in range(rounds):
        for name, read in reads.items():
            samples[name].append(timed(read))
    return samples


def report(title: str, samples: dict[str, list[int]], warmup: int) -> dict[str, float]:
    print(f"{title:<44}{'median µs':>12}{'p90 µs':>12}")
    medians = {}
    for name, values in samples.items():
        kept = values[warmup:]
        medians[name] = median_us(kept)
        print(f"  {name:<42}{medians[name]:>12,.1f}{p90_us(kept):>12,.1f}")
    return medians


def verdict(label: str, ratio: float, target: float) -> None:
    print(f"  {label:<42}{ratio:>8.2f}  {'PASS' if ratio <= target else 'MISS'}"
          f" (target ≤ {target})")


def flat(store: Store, name: str, rounds: int, warmup: int) -> None:
    sessions = {}
    for length in LENGTHS:
        sessions[length] = store.session(f"flat-{length}")
        fill(sessions[length], conversation(length))
    for budget, base in ((100, 10), (BUDGET, 1_000)):
        reads = {f"{name} {length:>7,} messages":
                 (lambda s=session, b=budget: s.read(max_tokens=b))
                 for length, session in sessions.items()}
        medians = report(f"read(max_tokens={budget:,})", interleaved(reads, rounds), warmup)
        longest, shortest = (medians[f"{name} {n:>7,} messages"] for n in (LENGTHS[-1], base))
        ratio = longest / shortest
        verdict(f"{name} median(100,000) / median({base:,})", ratio, FLAT_TARGET)
        print()


def summarized(store: Store, name: str, rounds: int, warmup: int) -> None:
    session = store.session("summarized")
    fill(session, conversation(LENGTHS[-1]))
    session.maybe_compact(lambda messages: "The customer asked about many orders.",
                          trigger_tokens=BUDGET, keep_tokens=BUDGET // 2)
    window = session.read(with_summary=True)
    last = window.version - min(m.seq or 0 for m in window) + 1
    reads = {f"{name} with_summary=True": lambda: session.read(with_summary=True),
             f"{name} last={last}": lambda: session.read(last=last)}
    medians = report(f"after maybe_compact: {len(window)} messages + summary",
                     interleaved(reads, rounds), warmup)
    summary, plain = medians.values()
    verdict(f"{name} with_summary / last={last}", summary / plain, SUMMARY_TARGET)
    print()


@contextmanager
def redis_url() -> Iterator[str]:
    with RedisServer() as server:
        yield server.url


@contextmanager
def postgres_url() -> Iterator[str]:
    with private_postgres() as url:
        yield f"{url}?migrate=true"  # a fresh cluster: create the schema


def backends(tmp: Path) -> dict[str, Callable[[], AbstractContextManager[str]]]:
    """Each backend's name and how to get its URL (a private server is started then)."""
    return {"memory://": lambda: nullcontext("memory://bench"),
            "sqlite": lambda: nullcontext(f"sqlite:///{tmp / 'bench.db'}?synchronous=normal"),
            "redis": redis_url,
            "postgres": postgres_url}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="60 timed reads per case")
    parser.add_argument("--only", default="memory://,sqlite,redis,postgres",
                        help="comma-separated backends (memory://, sqlite, redis, postgres)")
    args = parser.parse_args()
    rounds = 60 if args.quick else 300
    warmup = rounds // 10
    print_header("context that fits: budgeted and summarized reads", environment())
    with tempfile.TemporaryDirectory() as tmp:
        for name, server in backends(Path(tmp)).items():
            if name not in args.only.split(","):
                continue
            if name == "postgres" and postgres_missing():
                print(f"postgres left out: {postgres_missing()}\n")
                continue
            with server() as url, open_store(url) as store:
                flat(store, name, rounds + warmup, warmup)
                summarized(store, name, rounds + warmup, warmup)


if __name__ == "__main__":
    main()
