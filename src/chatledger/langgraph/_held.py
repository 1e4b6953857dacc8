"""Per session and channel, the last list a saver read or wrote, within a byte budget.

What ``_unchanged.py`` (items serialized at the last put) and ``_decoded.py``
(items decoded at the last read) keep: one entry per channel of a session,
each with its ``size`` in bytes. Bounded by ``limit`` sessions, least recently
used dropped first, and by ``budget`` bytes over all of them; a session whose
lists alone exceed the budget is not kept. Thread-safe.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, Protocol, TypeVar

__all__ = ["HeldLists"]


class _Sized(Protocol):
    @property
    def size(self) -> int: ...


L = TypeVar("L", bound=_Sized)


class HeldLists(Generic[L]):
    """Per session, a list kept per channel; least recently used sessions go first."""

    def __init__(self, budget: int, limit: int) -> None:
        self._budget = budget
        self._limit = limit
        self._lock = threading.Lock()
        self._held: OrderedDict[str, tuple[dict[str, L], int]] = OrderedDict()
        self._size = 0

    def get(self, session: str, channel: str) -> L | None:
        with self._lock:
            return self._held.get(session, ({}, 0))[0].get(channel)

    def keep(self, session: str, channel: str, kept: L) -> None:
        """``kept`` is now ``channel``'s list in ``session``, the most recently used."""
        with self._lock:
            lists, size = self._held.get(session, ({}, 0))
            old = lists.get(channel)
            size += kept.size - (old.size if old is not None else 0)
            lists = {**lists, channel: kept}
            self._drop(session)
            if size > self._budget:
                return
            self._held[session] = (lists, size)
            self._size += size
            while self._size > self._budget or len(self._held) > self._limit:
                self._drop(next(iter(self._held)))

    def forget(self, prefix: str) -> None:
        """Drop every session whose id starts with ``prefix``."""
        with self._lock:
            for session in [s for s in self._held if s.startswith(prefix)]:
                self._drop(session)

    def _drop(self, session: str) -> None:
        held = self._held.pop(session, None)
        if held is not None:
            self._size -= held[1]
