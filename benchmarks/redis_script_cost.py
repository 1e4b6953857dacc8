"""What does the server spend on one chatledger script call, and on what?

Client timings on a shared machine are noise; the server's own accounting is
not: ``INFO commandstats`` (microseconds per call of each command) and ``INFO
cpu`` (the main thread's CPU time). This script starts a private
``redis-server``, then runs variants of one call, each ``--calls`` times per
round, the variants alternating round by round, and after each run reads
what the server counted for it alone (``CONFIG RESETSTAT`` before it):

- ``RPUSH`` of a pair of entries, the raw append;
- empty scripts (``return 1``) with the APPEND call's keys and arguments, or a
  few packed ones, and with a table reply: the fixed cost of any EVALSHA;
- the APPEND and READ scripts themselves, as a two-message append and a
  ``read(last=20)`` on a session of 1,000 messages.

It prints the median over rounds of server µs per call (commandstats) and of
main-thread CPU µs per call (``INFO cpu``), and each variant's ratio to RPUSH.
commandstats times the command alone; the CPU column also holds reading and
parsing the request (each argument costs there too) and writing the reply, so
it is the one to compare variants that send different arguments by. Timings on
a shared machine move with its load: compare variants within one run, and for
exact counts run the server under ``valgrind --tool=callgrind`` (see
docs/development.md, Benchmarks).

    python benchmarks/redis_script_cost.py              # 8 rounds of 2,000 calls
    python benchmarks/redis_script_cost.py --quick      # 4 rounds of 500
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import redis
from _report import environment, parse_args, print_header

from chatledger import Store, assistant, open_store, user
from chatledger._backends.contract import Batch, ReadQuery
from chatledger._backends.redis.calls import Calls
from chatledger._codec import encode
from chatledger._options import StoreOptions
from chatledger.testing import RedisServer

USER_TEXT = "Where is my order? It was due on Tuesday and the tracking page says nothing. " * 2
ASSISTANT_TEXT = "Let me check: your order shipped yesterday and should arrive tomorrow. " * 8
HISTORY = 1_000


@dataclass
class Variant:
    """One kind of call: ``command`` is the name commandstats counts it under."""

    label: str
    command: str
    call: Callable[[int], object]
    usec: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


def stats(client: redis.Redis, command: str) -> tuple[int, float, float]:
    """Calls and microseconds of ``command`` since the last reset, and main-thread CPU s."""
    info = client.info("commandstats").get(f"cmdstat_{command}", {"calls": 0, "usec": 0})
    cpu = client.info("cpu")
    return (int(info["calls"]), float(info["usec"]),
            float(cpu["used_cpu_sys_main_thread"]) + float(cpu["used_cpu_user_main_thread"]))


def variants(client: redis.Redis, store: Store) -> list[Variant]:
    pair = [user(USER_TEXT), assistant(ASSISTANT_TEXT)]
    blobs = [encode(message) for message in pair]
    calls = Calls(StoreOptions(namespace="cost"))
    sample = calls.append("probe", Batch(ids=[m.id for m in pair], blobs=blobs))
    keys, args = list(sample.keys), list(sample.args)
    empty = client.register_script("return 1")
    table = client.register_script("return {'ok', 1, 2, 'abcdef0123456789'}")
    history = store.session("read")
    for start in range(0, HISTORY, 500):
        history.append([user(f"{n} {USER_TEXT}") for n in range(start, start + 500)])
    read = calls.read("read", ReadQuery(last=20))
    client.script_load(read.script.text)
    session = store.session("append")

    def append_pair(_: int) -> object:
        return session.append([user(USER_TEXT), assistant(ASSISTANT_TEXT)])

    return [
        Variant("RPUSH a pair", "rpush", lambda n: client.rpush("raw", *blobs)),
        Variant("EVALSHA return 1, 3 keys, no args", "evalsha", lambda n: empty(keys=keys)),
        Variant(f"EVALSHA return 1, 3 keys, APPEND's {len(args)} args", "evalsha",
                lambda n: empty(keys=keys, args=args)),
        Variant("EVALSHA return 1, 3 keys, APPEND's args + 10 small", "evalsha",
                lambda n: empty(keys=keys, args=[*args, *["0"] * 10])),
        Variant("EVALSHA table reply, 3 keys, no args", "evalsha", lambda n: table(keys=keys)),
        Variant("APPEND script (session.append of a pair)", "evalsha", append_pair),
        Variant(f"READ script, last=20 of {HISTORY:,}", "evalsha",
                lambda n: client.evalsha(read.script.sha, 3, *read.keys, *read.args)),
    ]


def main(argv: list[str] | None = None) -> int:
    (rounds, per_round), _ = parse_args(argv, __doc__, quick=(4, 500), full=(8, 2_000),
                                        quick_help="4 rounds of 500 calls instead of 8 of 2,000",
                                        check=False)
    with RedisServer() as server:
        client = redis.Redis(host=server.host, port=server.port)
        with open_store(server.url, namespace="cost") as store:
            chosen = variants(client, store)
            for _ in range(rounds):
                for variant in chosen:
                    client.config_resetstat()
                    _, _, cpu_before = stats(client, variant.command)
                    for i in range(per_round):
                        variant.call(i)
                    count, usec, cpu_after = stats(client, variant.command)
                    variant.usec.append(usec / count)
                    variant.cpu.append((cpu_after - cpu_before) * 1e6 / per_round)
        client.close()
    print_header("Server cost per call (private redis-server, INFO commandstats and cpu)",
                 [*environment(), ("rounds", f"{rounds} of {per_round:,} calls per variant")])
    base = statistics.median(chosen[0].usec)
    print(f"{'variant':<58} {'µs/call':>8} {'cpu µs':>8} {'x RPUSH':>8}")
    for variant in chosen:
        usec, cpu = statistics.median(variant.usec), statistics.median(variant.cpu)
        print(f"{variant.label:<58} {usec:>8.2f} {cpu:>8.2f} {usec / base:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
