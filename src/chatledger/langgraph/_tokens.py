"""A write being stored, as the saver's registries hold it (``inflight.py``, ``early.py``).

A put may wait for such a write; most writes end with nobody waiting. A
``concurrent.futures.Future`` per write cost every ``put_writes`` a Condition
(its lock and its waiters' list) made and notified: the future is made only
when a put waits, by the registry, under the registry's lock, which is also
where the write's end takes it, so a waiter never misses the end.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Generic, TypeVar

__all__ = ["WriteToken", "resolve"]

T = TypeVar("T")


class WriteToken(Generic[T]):
    """One write in flight; ``done()`` and ``result()`` once it ended."""

    __slots__ = ("_ended", "_future", "_value")

    def __init__(self) -> None:
        self._ended = False
        self._value: T | None = None
        self._future: Future[T | None] | None = None

    def done(self) -> bool:
        return self._ended

    def result(self) -> T | None:
        """What the write ended with (it has ended: see ``done``)."""
        assert self._ended, "the write has not ended"
        return self._value

    def waited(self) -> Future[T | None]:
        """The future a waiter waits on; call under the registry's lock."""
        if self._future is None:
            self._future = Future()
            if self._ended:
                self._future.set_result(self._value)
        return self._future

    def ended(self, value: T | None) -> Future[T | None] | None:
        """Mark the write ended (under the registry's lock); the future to resolve, if
        a waiter made one, to be resolved once the lock is let go (``resolve``)."""
        self._ended, self._value = True, value
        return self._future


def resolve(future: Future[T | None] | None, value: T | None) -> None:
    """Wake the waiters of an ended write, if it had any."""
    if future is not None and not future.done():
        future.set_result(value)
