"""The fault switches and counters of one `FaultProxy`, shared by all its threads.

Tests flip the switches from their own thread while pump threads read them, so
one-shot claims and counter updates happen under one lock. Plain values that are
only polled (blackhole, latency, drip, the counters) are read without it: a
reader that sees a change one poll late does no harm.
"""

from __future__ import annotations

import math
import random
import threading
from collections.abc import Callable
from typing import Literal

from ._link import Link

Direction = Literal["up", "down"]
UP: Direction = "up"  # client to server
DOWN: Direction = "down"  # server to client


class Faults:
    """Which faults are on, what one-shot faults are armed, and what they did so far."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.blackholed = False
        self.refusing = False
        self.latency = 0.0
        # Seconds before each byte of a reply; None when replies flow whole.
        self.drip_every: float | None = None
        self._cut_reply_armed = False
        self._cut_after: int | None = None
        self._lose_reply_armed = False
        self._lost_reply_then: Callable[[], None] | None = None
        self._reset_probability = 0.0
        self._rng = random.Random()
        self.connections_accepted = 0
        self.bytes_up = 0
        self.bytes_down = 0
        self.faults_injected = 0

    # -- switches, flipped by the test ---------------------------------------------------

    def set_latency(self, seconds: float) -> None:
        if not 0 <= seconds < math.inf:  # NaN too: a relay would sleep(nan) and die
            raise ValueError(f"latency must be a finite number of seconds >= 0, got {seconds}")
        self.latency = seconds

    def set_drip(self, byte_every: float | None) -> None:
        if byte_every is not None and not 0 <= byte_every < math.inf:
            raise ValueError(f"byte_every must be a finite number of seconds >= 0, or None "
                             f"to stop dripping, got {byte_every}")
        self.drip_every = byte_every

    def arm_cut(self, after_bytes: int | None) -> None:
        if after_bytes is not None and after_bytes < 0:
            raise ValueError("after_bytes must be >= 0")
        with self._lock:
            self._cut_reply_armed = True
            self._cut_after = after_bytes

    def arm_lost_reply(self, then: Callable[[], None] | None = None) -> None:
        with self._lock:
            self._lose_reply_armed = True
            self._lost_reply_then = then

    def set_reset_probability(self, probability: float, seed: int | None) -> None:
        if not 0.0 <= probability <= 1.0:
            raise ValueError("probability must be between 0 and 1")
        with self._lock:
            self._reset_probability = probability
            self._rng = random.Random(seed)

    def clear(self) -> None:
        with self._lock:
            self.blackholed = False
            self.refusing = False
            self.latency = 0.0
            self.drip_every = None
            self._cut_reply_armed = False
            self._lose_reply_armed = False
            self._lost_reply_then = None
            self._reset_probability = 0.0

    # -- decisions, taken by the pumps -------------------------------------------------

    def roll_random_reset(self) -> bool:
        with self._lock:
            probability = self._reset_probability
            return probability > 0.0 and self._rng.random() < probability

    def claim_lost_reply(self) -> tuple[bool, Callable[[], None] | None]:
        """Whether this request's reply is to be lost, and what to run once it is."""
        with self._lock:
            armed, self._lose_reply_armed = self._lose_reply_armed, False
            then, self._lost_reply_then = self._lost_reply_then, None
            return armed, then if armed else None

    def claim_cut(self, chunk_length: int) -> int | None:
        """Disarm cut_reply and return how many bytes of this chunk to forward, if armed."""
        with self._lock:
            if not self._cut_reply_armed:
                return None
            self._cut_reply_armed = False
            wanted = chunk_length // 2 if self._cut_after is None else self._cut_after
            return max(0, min(wanted, chunk_length - 1))

    # -- counters ------------------------------------------------------------------------

    def count_accepted(self) -> bool:
        """Count a new client connection; True if it must be refused."""
        with self._lock:
            self.connections_accepted += 1
            return self.refusing

    def count_fault(self) -> None:
        with self._lock:
            self.faults_injected += 1

    def count_bytes(self, direction: Direction, count: int) -> None:
        with self._lock:
            if direction == UP:
                self.bytes_up += count
            else:
                self.bytes_down += count

    def kill(self, link: Link, *, reset: bool) -> bool:
        """Close `link` as a fault (counted); False if it was closed already."""
        return link.close(reset=reset, on_close=self.count_fault)
