"""The faults a verify run injects: a plan drawn from a seed, played on a FaultProxy.

The plan is a pure function of the seed and the duration, so ``--seed`` gives
the same faults, in the same order and for the same times, on every run; only
where they fall among the workers' operations varies. Each fault lasts a
bounded time and is cleared before the next, with a healthy gap between.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._proxy import FaultProxy

# What each fault does to the traffic, as the report says it.
KINDS: dict[str, str] = {
    "outage": "new connections refused, open ones reset",
    "hang": "every byte held: the server seems up but answers nothing",
    "latency": "every chunk delayed, both ways",
    "resets": "connections reset at random",
    "lost replies": "commands applied, their replies dropped, connections reset",
    "cut replies": "replies cut short, connections closed",
    "drip": "replies forwarded one byte at a time",
}

# Outages outlast a worker's retry deadline, so callers see them fail, as an
# application would; the others are shorter and mostly absorbed by retries.
_LENGTHS = {"outage": (1.2, 2.5), "hang": (1.2, 2.5)}
_OTHER_LENGTH = (0.5, 2.0)
_GAP = (0.3, 1.0)
_REARM = 0.05  # one-shot faults are armed again this often while they last
_TRAFFIC_POLL = 0.01


@dataclass(frozen=True)
class Fault:
    """One fault: which, when (seconds after the first worker connected), how long, how hard."""

    kind: str
    at: float
    seconds: float
    level: float = 0.0
    """Latency in seconds, a reset probability, or seconds between dripped bytes."""

    def describe(self) -> str:
        strength = {"latency": f" (+{self.level * 1000:.0f} ms)",
                    "resets": f" (p={self.level:.2f} per chunk)",
                    "drip": f" (a byte every {self.level * 1000:.1f} ms)"}.get(self.kind, "")
        return (f"t={self.at:.2f}s {self.kind} for {self.seconds:.2f}s{strength}: "
                f"{KINDS[self.kind]}")


def plan(seed: int, duration: float) -> tuple[Fault, ...]:
    """The faults of a run of ``duration`` seconds: the same for the same seed."""
    rng = random.Random(seed)
    faults: list[Fault] = []
    at = rng.uniform(*_GAP)
    while at < duration:
        kind = rng.choice(sorted(KINDS))
        seconds = min(rng.uniform(*_LENGTHS.get(kind, _OTHER_LENGTH)), duration - at)
        faults.append(Fault(kind, round(at, 3), round(seconds, 3), _level(kind, rng)))
        at += seconds + rng.uniform(*_GAP)
    return tuple(faults)


def _level(kind: str, rng: random.Random) -> float:
    ranges = {"latency": (0.05, 0.4), "resets": (0.05, 0.3), "drip": (0.001, 0.005)}
    low_high = ranges.get(kind)
    return round(rng.uniform(*low_high), 4) if low_high else 0.0


Switch = Callable[[FaultProxy, Fault], None]

_SWITCHES: dict[str, Switch] = {
    "outage": lambda proxy, _: proxy.refuse(),
    "hang": lambda proxy, _: proxy.blackhole(),
    "latency": lambda proxy, fault: proxy.latency(fault.level),
    "resets": lambda proxy, fault: proxy.reset_randomly(fault.level),
    "lost replies": lambda proxy, _: proxy.lose_next_reply(),
    "cut replies": lambda proxy, _: proxy.cut_reply(),
    "drip": lambda proxy, fault: proxy.drip(fault.level),
}
_ONE_SHOT = frozenset({"lost replies", "cut replies"})


class FaultPlayer:
    """Plays a plan on a proxy in a background thread, from the first connection on.

    ``stop()`` ends it at once, whatever it was doing, and clears every fault:
    the thread only ever waits on its stop event, so it never outlives a run.
    """

    def __init__(self, proxy: FaultProxy, faults: Sequence[Fault]) -> None:
        self._proxy = proxy
        self._faults = tuple(faults)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._play, name="chatledger-verify-faults",
                                        daemon=True)
        self.played: list[Fault] = []
        """The faults injected so far (a run shorter than its plan injects fewer)."""

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._proxy.clear()

    def _play(self) -> None:
        # The workers start after their processes do (a second or more): the
        # plan's clock starts with their traffic, not with the command.
        while self._proxy.connections_accepted == 0:
            if self._stop.wait(_TRAFFIC_POLL):
                return
        origin = time.monotonic()
        for fault in self._faults:
            if self._stop.wait(max(0.0, origin + fault.at - time.monotonic())):
                return
            self.played.append(fault)
            self._inject(fault, until=origin + fault.at + fault.seconds)
            self._proxy.clear()

    def _inject(self, fault: Fault, until: float) -> None:
        switch = _SWITCHES[fault.kind]
        switch(self._proxy, fault)
        while (left := until - time.monotonic()) > 0:
            if self._stop.wait(min(left, _REARM) if fault.kind in _ONE_SHOT else left):
                return
            if fault.kind in _ONE_SHOT:
                switch(self._proxy, fault)
