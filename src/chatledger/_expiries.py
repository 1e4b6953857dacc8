"""The deadlines of an event loop's store calls, kept by timers they share.

``asyncio.timeout`` arms a timer per call: a TimerHandle made, pushed on the
loop's heap and cancelled again, about a tenth of an async Redis turn's
client work once its commands share a connection. Here the calls whose
deadlines fall in the same ``GRAIN`` of loop time share one timer; a call
only joins and leaves a set. The timer cancels the tasks whose calls are
still running, so a call ends at most ``GRAIN`` after its deadline, never
before it.

Cancellation is told apart from any other as ``asyncio.timeout`` does: the
task's count of cancellation requests is taken on entry and given back on
exit (``Task.uncancel``), and only a CancelledError that no one else asked
for becomes the call's overrun.
"""

from __future__ import annotations

import asyncio
import math
import sys
import time
import weakref
from collections.abc import Awaitable
from typing import Any, TypeVar

__all__ = ["GRAIN", "Overrun", "bounded"]

T = TypeVar("T")

GRAIN = 0.01  # seconds of deadlines one timer serves: the most a call may overrun


class Overrun(Exception):
    """The call's deadline passed while its attempt ran; the attempt was cancelled."""


class _Watch:
    """One call under way: its task, and whether its deadline cancelled it."""

    __slots__ = ("expired", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.expired = False


class _Expiries:
    """One loop's calls under way, by the slot of loop time their deadline falls in."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._slots: dict[int, set[_Watch]] = {}

    def watch(self, watch: _Watch, at: float) -> set[_Watch]:
        """Cancel ``watch.task`` once loop time reaches ``at``, unless forgotten first."""
        slot = math.ceil(at / GRAIN)
        watches = self._slots.get(slot)
        if watches is None:
            watches = self._slots[slot] = set()
            self._loop.call_at(slot * GRAIN, self._expire, slot)
        watches.add(watch)
        return watches

    def _expire(self, slot: int) -> None:
        for watch in self._slots.pop(slot, ()):
            watch.expired = True
            watch.task.cancel()


_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Expiries] = (
    weakref.WeakKeyDictionary())
# The loop asked for last, and its expiries: one weak lookup less per call. One
# tuple, read and replaced whole, since another thread's loop may replace it.
_recent: list[tuple[Any, _Expiries | None]] = [(None, None)]


def _expiries(loop: asyncio.AbstractEventLoop) -> _Expiries:
    recent_loop, recent = _recent[0]
    if recent_loop is loop and recent is not None:
        return recent
    found = _by_loop.get(loop)
    if found is None:
        found = _by_loop[loop] = _Expiries(loop)
    _recent[0] = (loop, found)
    return found


if sys.version_info >= (3, 11):  # Task.cancelling and uncancel; 3.10 has wait_for

    async def bounded(attempt: Awaitable[T], deadline: float) -> T:
        """``await attempt``, cancelled if it still runs at ``deadline`` (``time.monotonic()``):
        then :class:`Overrun` is raised instead of the CancelledError."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None, "a store call runs in a task"
        watch = _Watch(task)
        cancelling = task.cancelling()
        # The deadline in loop time; the monotonic clock is read first, so that loop time,
        # read after it, never puts the cut before the deadline (a slot's edge may fall
        # between the two reads).
        now = time.monotonic()
        watches = _expiries(loop).watch(watch, deadline - now + loop.time())
        try:
            result = await attempt
        except asyncio.CancelledError as exc:
            if watch.expired and task.uncancel() <= cancelling:
                raise Overrun from exc
            raise
        except BaseException:
            if watch.expired:
                task.uncancel()
            raise
        finally:
            watches.discard(watch)
        if watch.expired:  # the attempt finished as the timer fired: keep its result
            task.uncancel()
        return result
