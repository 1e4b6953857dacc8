"""Retrying BackendUnavailable, within the policy's attempts and deadline.

Retrying is safe for every operation: reads and deletes are naturally
idempotent, and appends are made idempotent by message ids.

A retry starts only if an attempt as long as the longest one so far can end
before the deadline. The deadline also bounds the attempt under way
(:mod:`chatledger._deadline`), so a call gives up within ``retry.deadline``
even against a server that accepts connections and answers a byte at a time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from .._deadline import CALL_DEADLINE, AsyncCallDeadline, Pauses
from .._errors import BackendUnavailable
from .._options import StoreOptions

__all__ = ["acall_with_retry"]

T = TypeVar("T")


async def acall_with_retry(
    options: StoreOptions,
    operation: Callable[[], Awaitable[T]],
    retry: Callable[[], Awaitable[T]] | None = None,
) -> T:
    """Run ``operation``, retrying BackendUnavailable with jittered backoff.

    ``retry``, when given, is what the attempts after the first run: an append
    that must not land on a ledger other than the one it first aimed at.
    """
    deadline = AsyncCallDeadline(options.retry.deadline)
    started = attempt = time.monotonic()
    pauses: Pauses | None = None  # built on the first failure: most calls never fail
    token = deadline.start()
    try:
        while True:
            try:
                return await deadline.bound(operation())
            except BackendUnavailable:
                pauses = pauses or Pauses(options, started)
                delay = pauses.next(time.monotonic() - attempt)
                if delay is None:
                    raise
            await asyncio.sleep(delay)
            attempt = time.monotonic()
            operation = retry or operation
    finally:
        CALL_DEADLINE.reset(token)
