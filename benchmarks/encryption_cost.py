"""What does encryption at rest add to an agent turn?

The turn of ``benchmarks/turn_cost.py`` (``read(last=20)`` then the append of a
user+assistant pair, in a session of 1,000 messages) timed side by side on two
stores of one backend: one without ``encryption=``, one with a ``Keyring``
(AES-256-GCM per entry, so a turn opens 20 entries and seals 2; the keyring
remembers the entries it opened lately, so 18 of the 20 were opened by the
previous turn: ``--cold`` opens them all afresh). The two run
interleaved, turn for turn, so that drift favours neither. Backends:
``memory://``, SQLite in a temporary directory (``synchronous=full`` and
``normal``) and a private ``redis-server`` (``chatledger.testing.RedisServer``).
It prints the medians and the ratio encrypted / plain against the target of
1.3. A measurement report, not a test: it exits 0 whether or not the target
is met.

Run it from the repository root::

    python benchmarks/encryption_cost.py            # 400 timed turns per store
    python benchmarks/encryption_cost.py --quick    # 100
    python benchmarks/encryption_cost.py --cold     # no entry opened twice
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _report import environment, print_header

from chatledger import Keyring, _crypto, open_store
from chatledger._turn_cost import WINDOW, Row, conversation, fill, measure, session_turn
from chatledger.testing import RedisServer

HISTORY = 1_000
TARGET = 1.3
PLAIN, SEALED = 0, 1  # the two "lengths" measure() interleaves


@contextmanager
def backends(directory: Path) -> Iterator[dict[str, str]]:
    """The URLs to measure, by label; the Redis server lives as long as the block."""
    with RedisServer() as server:
        yield {
            "memory://": "memory://",
            "sqlite (synchronous=full)": f"sqlite:///{directory}/full.db",
            "sqlite (synchronous=normal)": f"sqlite:///{directory}/normal.db?synchronous=normal",
            "redis (private server)": server.url,
        }


def measure_backend(label: str, url: str, turns: int, warmup: int) -> list[Row]:
    keyring = Keyring({"bench": Keyring.new_key()}, current="bench")
    with open_store(url, namespace="plain") as plain, \
            open_store(url, namespace="sealed", encryption=keyring) as sealed:
        history = conversation(HISTORY)
        sessions = {PLAIN: plain.session("s"), SEALED: sealed.session("s")}
        for session in sessions.values():
            fill(session, history)
        del history
        return measure(label, {kind: session_turn(s) for kind, s in sessions.items()},
                       timed=turns, warmup=warmup)


def print_table(rows: list[Row]) -> None:
    medians = {(row.contender, row.length): row for row in rows}
    print(f"{'backend':<29} {'plain µs':>10} {'encrypted µs':>13} {'ratio':>7}  "
          f"target ≤ {TARGET}")
    print("-" * 75)
    for backend in dict.fromkeys(row.contender for row in rows):
        plain, sealed = medians[backend, PLAIN], medians[backend, SEALED]
        ratio = sealed.median_us / plain.median_us
        verdict = "PASS" if ratio <= TARGET else "MISS"
        print(f"{backend:<29} {plain.median_us:>10,.1f} {sealed.median_us:>13,.1f} "
              f"{ratio:>7.2f}  {verdict}")
    print("\n(medians; p90 plain / encrypted: " + ", ".join(
        f"{b} {medians[b, PLAIN].p90_us:,.0f} / {medians[b, SEALED].p90_us:,.0f}"
        for b in dict.fromkeys(row.contender for row in rows)) + ")")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="100 timed turns instead of 400")
    parser.add_argument("--cold", action="store_true",
                        help="open every entry of every read afresh (a reader that never saw "
                             "the window: the keyring's cache of recent entries off)")
    args = parser.parse_args(argv)
    turns, warmup = (100, 10) if args.quick else (400, 40)
    if args.cold:
        _crypto._RECENT_BYTES = -1
    print_header(f"chatledger encryption cost: read(last={WINDOW}) + append(1 pair), "
                 f"history {HISTORY:,}", [*environment(), ("turns", f"{turns} timed per store "
                                                           f"after {warmup} warm-up turns")])
    with tempfile.TemporaryDirectory(prefix="chatledger-bench-") as name, \
            backends(Path(name)) as urls:
        rows = [row for label, url in urls.items()
                for row in measure_backend(label, url, turns, warmup)]
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
