"""Retrying BackendUnavailable, within the policy's attempts and deadline.

Retrying is safe for every operation: reads and deletes are naturally
idempotent, and appends are made idempotent by message ids.

A retry starts only if it can end before the deadline: an attempt is bounded
by the store's ``timeout``, so a call gives up within ``retry.deadline`` even
against a server that accepts connections and never answers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from .errors import BackendUnavailable
from .options import StoreOptions

T = TypeVar("T")


def call_with_retry(options: StoreOptions, operation: Callable[[], T]) -> T:
    """Run ``operation``, retrying BackendUnavailable with jittered backoff."""
    started = attempt = time.monotonic()
    pauses: _Pauses | None = None  # built on the first failure: most calls never fail
    while True:
        try:
            return operation()
        except BackendUnavailable:
            pauses = pauses or _Pauses(options, started)
            delay = pauses.next(time.monotonic() - attempt)
            if delay is None:
                raise
        time.sleep(delay)
        attempt = time.monotonic()


async def acall_with_retry(options: StoreOptions, operation: Callable[[], Awaitable[T]]) -> T:
    """The async twin of :func:`call_with_retry`."""
    started = attempt = time.monotonic()
    pauses: _Pauses | None = None
    while True:
        try:
            return await operation()
        except BackendUnavailable:
            pauses = pauses or _Pauses(options, started)
            delay = pauses.next(time.monotonic() - attempt)
            if delay is None:
                raise
        await asyncio.sleep(delay)
        attempt = time.monotonic()


class _Pauses:
    """The pauses between attempts of one call, while attempts and time remain."""

    def __init__(self, options: StoreOptions, started: float) -> None:
        self._delays: Iterator[float] = options.retry.delays()
        self._deadline = started + options.retry.deadline
        self._attempt = options.timeout

    def next(self, last_attempt: float) -> float | None:
        """The pause before the next attempt, or None when the budget is spent.

        The next attempt may last as long as the last one did, when that was
        longer than ``timeout`` (several sentinels to ask, a slow connect).
        """
        self._attempt = max(self._attempt, last_attempt)
        delay = next(self._delays, None)
        if delay is None or time.monotonic() + delay + self._attempt > self._deadline:
            return None
        return delay
