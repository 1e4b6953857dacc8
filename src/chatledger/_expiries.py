"""The deadlines of an event loop's store calls, kept by one timer they share.

``asyncio.timeout`` arms a timer per call: a TimerHandle made, pushed on the
loop's heap and cancelled again, about a tenth of an async Redis turn's
client work once its commands share a connection. Here the calls whose
deadlines fall in the same ``GRAIN`` of loop time share a slot, and a loop
has one timer, armed for the earliest slot that held a call when it was
armed; a call only joins and leaves its slot's set, and a slot left empty
is dropped at once. The timer cancels the tasks whose calls are still
running, so a call ends at most ``GRAIN`` after its deadline, never before it.

One timer, not one per slot: calls end in milliseconds and their deadlines
are seconds away, so a timer per slot (a handle, its context, the slot's
set) would outlive its calls by the whole deadline, a few thousand objects
that every full collection of the garbage collector walks. The one timer
runs in an empty context of its own, not a copy of the caller's.

Cancellation is told apart from any other as ``asyncio.timeout`` does: the
task's count of cancellation requests is taken on entry and given back on
exit (``Task.uncancel``), and only a CancelledError that no one else asked
for becomes the call's overrun.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import sys
import time
import weakref
from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar

__all__ = ["GRAIN", "Deadline", "Overrun", "Watched", "bounded"]

T = TypeVar("T")

GRAIN = 0.01  # seconds of deadlines one slot serves: the most a call may overrun


class Overrun(Exception):
    """The call's deadline passed while its attempt ran; the attempt was cancelled."""


class Watched(Protocol):
    """One call's deadline as the timer keeps it: ``at`` (``time.monotonic()``), and
    for the attempt under way its task, its slot and whether the deadline cancelled it.
    The call's own object (``_deadline.AsyncCallDeadline``): no other is made per call."""

    at: float
    task: asyncio.Task[Any] | None
    slot: int
    expired: bool

    def overrun(self) -> BaseException:
        """What the call raises when its deadline cancelled its attempt."""


class Deadline:
    """A plain :class:`Watched`: :class:`Overrun` when it passes."""

    __slots__ = ("at", "expired", "slot", "task")

    def __init__(self, at: float) -> None:
        self.at = at
        self.task: asyncio.Task[Any] | None = None
        self.slot = 0
        self.expired = False

    def overrun(self) -> BaseException:
        return Overrun()


class _Expiries:
    """One loop's calls under way, by the slot of loop time their deadline falls in."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._slots: dict[int, set[Watched]] = {}  # only slots that hold a call
        self._timer: asyncio.TimerHandle | None = None
        self._armed = 0  # the slot the timer fires for
        self._context = contextvars.Context()  # the timer's: no copy of a caller's

    def watch(self, watch: Watched, at: float) -> None:
        """Cancel ``watch.task`` once loop time reaches ``at``, unless forgotten first."""
        slot = watch.slot = math.ceil(at / GRAIN)
        watches = self._slots.get(slot)
        if watches is None:
            watches = self._slots[slot] = set()
            if self._timer is None or slot < self._armed:  # a shorter deadline than any
                self._arm(slot)
        watches.add(watch)

    def forget(self, watch: Watched) -> None:
        """The call ended: its slot goes with its last call (the timer stays armed)."""
        watches = self._slots.get(watch.slot)
        if watches is not None:
            watches.discard(watch)
            if not watches:
                del self._slots[watch.slot]

    def _arm(self, slot: int) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._armed = slot
        self._timer = self._loop.call_at(slot * GRAIN, self._expire, context=self._context)

    def _expire(self) -> None:
        """Cancel the calls of every slot due, then arm for the earliest one left."""
        self._timer = None
        due = [slot for slot in self._slots if slot <= self._armed]
        for slot in due:
            for watch in self._slots.pop(slot):
                watch.expired = True
                assert watch.task is not None
                watch.task.cancel()
        if self._slots:
            self._arm(min(self._slots))


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

    async def bounded(attempt: Awaitable[T], deadline: Watched) -> T:
        """``await attempt``, cancelled if it still runs at ``deadline.at``
        (``time.monotonic()``): then ``deadline.overrun()`` is raised instead of the
        CancelledError."""
        loop = asyncio.get_running_loop()
        task = deadline.task = asyncio.current_task()
        assert task is not None, "a store call runs in a task"
        deadline.expired = False
        cancelling = task.cancelling()
        expiries = _expiries(loop)
        # The deadline in loop time; the monotonic clock is read first, so that loop time,
        # read after it, never puts the cut before the deadline (a slot's edge may fall
        # between the two reads).
        now = time.monotonic()
        expiries.watch(deadline, deadline.at - now + loop.time())
        try:
            result = await attempt
        except asyncio.CancelledError as exc:
            if deadline.expired and task.uncancel() <= cancelling:
                raise deadline.overrun() from exc
            raise
        except BaseException:
            if deadline.expired:
                task.uncancel()
            raise
        finally:
            expiries.forget(deadline)
            deadline.task = None
        if deadline.expired:  # the attempt finished as the timer fired: keep its result
            task.uncancel()
        return result
