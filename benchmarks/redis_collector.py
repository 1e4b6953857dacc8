"""Async Redis turns and the garbage collector: CPU per turn, and the collections it ran.

The turn of ``throughput.py`` (read the last 20 messages of a session, then append
a user/assistant pair; 100 turns in flight, 1,000 sessions of 20 messages) on a
private ``redis-server``, chatledger's async store against a raw redis.asyncio
pipeline (``LRANGE`` and ``RPUSH``, ``json.loads`` of the window), one after the
other in one process. For each: the client's CPU per turn (``time.process_time``),
and the collections by generation with the time spent in them (``gc.callbacks``).

The turns run as ``throughput.py``'s do: 100 workers, each taking the next turn
when its last one ends. ``--hold`` keeps each turn's window (the ``History``
read) until its append is answered, as ``throughput.py``'s turn and an agent's
do: the windows of the turns in their append then live across a round trip.

``--ballast N`` holds N more objects for the whole run, as an application's heap
does: full collections then come rarely and cost more. ``--no-gc`` switches the
collector off. Where the store's own work ends and the collector's begins is the
difference between those runs (benchmarks/RESULTS.md)::

    python benchmarks/redis_collector.py
    python benchmarks/redis_collector.py --hold
    python benchmarks/redis_collector.py --ballast 500000
    python benchmarks/redis_collector.py --no-gc
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as aredis
from _report import environment, print_header

from chatledger import assistant, open_async_store, user
from chatledger.testing import RedisServer

SESSIONS, WINDOW, IN_FLIGHT, WARM_UP = 1_000, 20, 100, 500
USER_TEXT = "Where is my order? It was due on Tuesday and the tracking page says nothing. " * 2
ASSISTANT_TEXT = "Let me check: your order shipped yesterday and should arrive tomorrow. " * 8


class Collections:
    """Collections by generation, and the seconds spent in each generation's."""

    def __init__(self) -> None:
        self.counts = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        generation = info["generation"]
        self.counts[generation] += 1
        self.seconds[generation] += time.perf_counter() - self._started

    def reset(self) -> None:
        self.counts, self.seconds = [0, 0, 0], [0.0, 0.0, 0.0]


async def _in_flight(turn: Callable[[int], Awaitable[None]], turns: int) -> None:
    """``turns`` turns, ``IN_FLIGHT`` at once (a worker per turn in flight)."""
    numbers = iter(range(turns))

    async def worker() -> None:
        for index in numbers:
            await turn(index)

    await asyncio.gather(*(worker() for _ in range(IN_FLIGHT)))


async def _timed(turn: Callable[[int], Awaitable[None]], turns: int,
                 collections: Collections) -> float:
    """CPU µs per turn of ``turns`` turns, ``IN_FLIGHT`` at once, after a warm-up."""
    await _in_flight(turn, WARM_UP)
    collections.reset()
    started = time.process_time()
    await _in_flight(turn, turns)
    return (time.process_time() - started) / turns * 1e6


async def _ours(url: str, turns: int, collections: Collections, hold: bool) -> float:
    async with await open_async_store(url, namespace="collector") as store:
        sessions = [store.session(f"s{n}") for n in range(SESSIONS)]
        for session in sessions:
            await session.append([m for _ in range(WINDOW // 2)
                                  for m in (user(USER_TEXT), assistant(ASSISTANT_TEXT))])

        async def turn(index: int) -> None:
            session = sessions[index % SESSIONS]
            window = await session.read(last=WINDOW)
            if not hold:
                del window
            await session.append([user(USER_TEXT), assistant(ASSISTANT_TEXT)])

        return await _timed(turn, turns, collections)


async def _raw(url: str, turns: int, collections: Collections, hold: bool) -> float:
    client = aredis.Redis.from_url(url, max_connections=IN_FLIGHT)
    pair = (json.dumps({"role": "user", "content": USER_TEXT}),
            json.dumps({"role": "assistant", "content": ASSISTANT_TEXT}))
    for n in range(SESSIONS):
        await client.rpush(f"raw:{n}", *(pair * (WINDOW // 2)))

    async def turn(index: int) -> None:
        async with client.pipeline(transaction=False) as pipe:
            key = f"raw:{index % SESSIONS}"
            pipe.lrange(key, -WINDOW, -1)
            pipe.rpush(key, *pair)
            window, _ = await pipe.execute()
        [json.loads(entry) for entry in window]  # one round trip: nothing to hold across

    try:
        return await _timed(turn, turns, collections)
    finally:
        await client.aclose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=4_000, help="turns timed per side")
    parser.add_argument("--ballast", type=int, default=0, help="objects held for the run")
    parser.add_argument("--hold", action="store_true",
                        help="keep each turn's window until its append is answered")
    parser.add_argument("--no-gc", action="store_true", help="switch the collector off")
    args = parser.parse_args(argv)
    ballast = [[n] for n in range(args.ballast)]
    if args.no_gc:
        gc.disable()
    collections = Collections()
    gc.callbacks.append(collections)
    print_header("Async Redis turns and the garbage collector",
                 [*environment(), ("turns", f"{args.turns:,} per side, {IN_FLIGHT} in flight"
                                            f"{', windows held' if args.hold else ''}"),
                  ("heap", f"{len(gc.get_objects()):,} objects, {len(ballast):,} of them "
                           f"ballast; collector {'off' if args.no_gc else 'on'}")])
    print(f"{'side':<28}{'CPU µs/turn':>12}   collections (gen 0 / 1 / 2) and ms in them,"
          " per 1,000 turns")
    with RedisServer() as server:
        for name, side in (("chatledger async", _ours), ("raw redis.asyncio pipeline", _raw)):
            cpu = asyncio.run(side(server.url, args.turns, collections, args.hold))
            per = 1000 / args.turns
            counts = " / ".join(f"{c * per:.1f} ({s * 1e3 * per:.1f})"
                                for c, s in zip(collections.counts, collections.seconds,
                                                strict=True))
            print(f"{name:<28}{cpu:>12.0f}   {counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
