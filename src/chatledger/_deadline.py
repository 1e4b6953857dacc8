"""The time budget of one store call, with its retries: promise 5's bound.

An async attempt is cancelled when the call's deadline passes (at most
:data:`~chatledger._expiries.GRAIN` after it: the loop's calls share a timer). A sync attempt
cannot be cancelled from Python, so the deadline is published in a context
variable for the I/O layer, which arms :mod:`chatledger._watchdog` to abort a
blocking read that outlives it (a server that drips its reply a byte at a time
never trips a per-read socket timeout).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Iterator
from contextvars import ContextVar, Token
from typing import Any, TypeVar

from . import _expiries
from ._errors import BackendUnavailable
from ._options import StoreOptions

__all__ = ["CALL_DEADLINE", "AsyncCallDeadline", "CallDeadline", "Pauses", "time_left"]

T = TypeVar("T")

CALL_DEADLINE: ContextVar[float | None] = ContextVar("chatledger_call_deadline", default=None)
"""The ``time.monotonic()`` by which the running store call must end, if any."""


def time_left() -> float | None:
    """Seconds left of the running store call's deadline (negative once it passed), or
    None outside a store call."""
    deadline = CALL_DEADLINE.get()
    return None if deadline is None else deadline - time.monotonic()


class CallDeadline:
    """The deadline of a sync call: set for the I/O layer while the call runs."""

    __slots__ = ("at", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def start(self) -> Token[float | None]:
        """Publish the deadline for the I/O layer; ``CALL_DEADLINE.reset(token)`` ends it.

        A token rather than a context manager: every store call passes here.
        """
        return CALL_DEADLINE.set(self.at)

    def bound(self, result: T) -> T:
        """The attempt's result: a sync attempt was bounded by the I/O layer as it ran."""
        return result

    def overrun(self) -> BackendUnavailable:
        return BackendUnavailable(
            f"no answer within the call's deadline of {self.seconds:g} s (retry.deadline); "
            "an append may or may not have been stored: appending the same messages again "
            "is safe"
        )


class AsyncCallDeadline(CallDeadline):
    """The deadline of an async call: each attempt is cancelled when it passes.

    It is also what the loop's shared timer keeps of the call
    (:class:`chatledger._expiries.Watched`): no other object per call, and
    ``bound`` hands back the bounded attempt itself, no coroutine around it.
    """

    __slots__ = ("expired", "slot", "task")

    def __init__(self, seconds: float) -> None:
        super().__init__(seconds)
        self.task: asyncio.Task[Any] | None = None
        self.slot = 0
        self.expired = False

    if sys.version_info >= (3, 11):

        def bound(self, attempt: Awaitable[T]) -> Awaitable[T]:  # type: ignore[override]
            # A timer shared with the loop's other calls, no task (unlike wait_for).
            return _expiries.bounded(attempt, self)

    else:  # pragma: no cover -- Python 3.10

        async def bound(self, attempt: Awaitable[T]) -> T:  # type: ignore[override]
            try:
                return await asyncio.wait_for(attempt, self.at - time.monotonic())
            except asyncio.TimeoutError as exc:
                raise self.overrun() from exc


class Pauses:
    """The pauses between attempts of one call, while attempts and time remain."""

    def __init__(self, options: StoreOptions, started: float) -> None:
        self._delays: Iterator[float] = options.retry.delays()
        self._deadline = started + options.retry.deadline
        # What an attempt may take is learnt from those made: a refused connection
        # fails at once and leaves room to retry within a deadline under `timeout`;
        # an attempt that then runs long is cut off at the deadline.
        self._attempt = 0.0

    def next(self, last_attempt: float) -> float | None:
        """The pause before the next attempt, or None when the budget is spent.

        The next attempt may last as long as the longest one so far (several
        sentinels to ask, a slow connect).
        """
        self._attempt = max(self._attempt, last_attempt)
        delay = next(self._delays, None)
        if delay is None or time.monotonic() + delay + self._attempt > self._deadline:
            return None
        return delay
