"""What every store call did, for whoever listens: the probe of the pytest plugin,
a metrics exporter, a debugging session.

A listener is called once per store call, after it ended, with an
:class:`Operation`. Listening costs nothing while nobody listens: the store
checks one list before doing any bookkeeping. Listeners run on the calling
thread (or event loop) and must be quick; one that raises breaks the call, so
keep them simple.

    >>> from chatledger import _events as events
    >>> with events.listening(seen.append):
    ...     store.session("s").read(last=5)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["Listener", "Operation", "Watch", "active", "listening", "refused"]

T = TypeVar("T")


@dataclass(frozen=True)
class Operation:
    """One store call: what it was, where, how long it took, how it ended.

    ``name`` is the store method (``append``, ``read``, ``info``, ``trim``,
    ``delete``, ``list_sessions``, ``purge``); ``target`` the session id, or
    the prefix for ``list_sessions`` and ``purge``. ``attempts`` counts the
    retries too (1: no retry). ``result`` is what the call returned (an Ack, a
    History, ...), ``error`` what it raised; one of them is None.
    """

    name: str
    url: str
    namespace: str
    target: str
    started: float  # time.monotonic()
    duration: float  # seconds
    attempts: int
    result: object = None
    error: BaseException | None = None


Listener = Callable[[Operation], None]

_listeners: list[Listener] = []


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Call ``listener`` with every store call of this process while the block runs."""
    _listeners.append(listener)
    try:
        yield
    finally:
        _listeners.remove(listener)


def active() -> bool:
    """Whether anyone listens (the store skips all bookkeeping when not)."""
    return bool(_listeners)


def emit(operation: Operation) -> None:
    for listener in list(_listeners):
        listener(operation)


class Watch:
    """Times one store call and counts its attempts, then tells the listeners."""

    def __init__(self, url: str, namespace: str, name: str, target: str) -> None:
        self._where = (name, url, namespace, target)
        self._started = time.monotonic()
        self.attempts = 0

    def counted(self, attempt: Callable[[], T]) -> Callable[[], T]:
        """``attempt``, counting each time it runs."""

        def run() -> T:
            self.attempts += 1
            return attempt()

        return run

    def ended(self, result: object = None, error: BaseException | None = None) -> None:
        name, url, namespace, target = self._where
        emit(Operation(name, url, namespace, target, self._started,
                       time.monotonic() - self._started, self.attempts, result, error))


def refused(url: str, namespace: str, name: str, target: str, error: BaseException) -> None:
    """A call refused before any I/O (InvalidMessage at append): listeners see it too."""
    if _listeners:
        Watch(url, namespace, name, target).ended(error=error)
