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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = ["Listener", "Operation", "Watch", "active", "listening", "refused"]


@dataclass(frozen=True)
class Operation:
    """One store call: what it was, where, how long it took, how it ended.

    ``name`` is the store method (``append``, ``read``, ``info``, ``trim``,
    ``delete``, ``list_sessions``, ``purge``, and ``heads`` and ``group_heads``
    for LedgerStore's listings); ``target`` the session id, or the prefix for
    ``list_sessions``, ``heads``, ``group_heads`` and ``purge``. ``attempts`` counts the
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
    failures: tuple[tuple[float, str], ...] = ()
    sent: int = 0


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
    """Times one store call and counts its attempts, then tells the listeners.

    ``also`` are listeners of this store only (its telemetry), told after the
    process-wide ones; ``sent`` is the encoded size of an append's batch.
    """

    def __init__(self, url: str, namespace: str, name: str, target: str, *,
                 also: Sequence[Listener] = (), sent: int = 0) -> None:
        self._where = (name, url, namespace, target)
        self._started = time.monotonic()
        self._also = also
        self._sent = sent
        self._failures: list[tuple[float, str]] = []
        self.attempts = 0

    def failed(self, error: BaseException) -> None:
        """Note an attempt that raised: the store counts ``attempts`` and calls this."""
        self._failures.append((time.monotonic(), type(error).__name__))

    def ended(self, result: object = None, error: BaseException | None = None) -> None:
        name, url, namespace, target = self._where
        operation = Operation(name, url, namespace, target, self._started,
                              time.monotonic() - self._started, self.attempts, result, error,
                              tuple(self._failures), self._sent)
        emit(operation)
        for listener in self._also:
            listener(operation)


def refused(url: str, namespace: str, name: str, target: str, error: BaseException, *,
            also: Sequence[Listener] = ()) -> None:
    """A call refused before any I/O (InvalidMessage at append): listeners see it too."""
    if _listeners or also:
        Watch(url, namespace, name, target, also=also).ended(error=error)
