"""Retrying BackendUnavailable, within the policy's attempts and deadline.

Retrying is safe for every operation: reads and deletes are naturally
idempotent, and appends are made idempotent by message ids.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeVar

from .errors import BackendUnavailable
from .options import RetryPolicy

T = TypeVar("T")


def call_with_retry(policy: RetryPolicy, operation: Callable[[], T]) -> T:
    """Run ``operation``, retrying BackendUnavailable with jittered backoff."""
    deadline = time.monotonic() + policy.deadline
    delays = policy.delays()
    while True:
        try:
            return operation()
        except BackendUnavailable:
            delay = _next_delay(delays, deadline)
            if delay is None:
                raise
            time.sleep(delay)


async def acall_with_retry(policy: RetryPolicy, operation: Callable[[], Awaitable[T]]) -> T:
    """The async twin of :func:`call_with_retry`."""
    deadline = time.monotonic() + policy.deadline
    delays = policy.delays()
    while True:
        try:
            return await operation()
        except BackendUnavailable:
            delay = _next_delay(delays, deadline)
            if delay is None:
                raise
            await asyncio.sleep(delay)


def _next_delay(delays: Iterator[float], deadline: float) -> float | None:
    """The pause before the next attempt, or None when the budget is spent."""
    delay = next(delays, None)
    if delay is None or time.monotonic() + delay >= deadline:
        return None
    return delay
