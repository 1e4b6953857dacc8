"""What a saver keeps per session between calls, within a byte budget.

Three caches keep something per session: the value entries of its latest
state (``_cache.py``), and per channel the last list serialized at a put
(``_unchanged.py``) or decoded at a read (``_decoded.py``). Each is bounded
the same way: ``limit`` sessions, least recently used dropped first, and
``budget`` bytes over all of them; a session whose value alone exceeds the
budget is not kept. :class:`SessionLRU` is that bound; :class:`HeldLists`
keeps a list per channel in it. Thread-safe.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Generic, Protocol, TypeVar

__all__ = ["HeldLists", "SessionLRU"]


class _Sized(Protocol):
    @property
    def size(self) -> int: ...


V = TypeVar("V", bound=_Sized)
L = TypeVar("L", bound=_Sized)


class SessionLRU(Generic[V]):
    """Per session one value of ``size`` bytes; least recently used sessions go first."""

    def __init__(self, budget: int, limit: int) -> None:
        self._budget = budget
        self._limit = limit
        self._lock = threading.Lock()
        self._held: OrderedDict[str, V] = OrderedDict()
        self._size = 0

    def forget(self, prefix: str) -> None:
        """Drop every session whose id starts with ``prefix``."""
        with self._lock:
            for session in [s for s in self._held if s.startswith(prefix)]:
                self._drop(session)

    def _store(self, session: str, value: V) -> None:
        """``value`` is now ``session``'s, the most recently used; call under ``_lock``."""
        self._drop(session)
        if value.size > self._budget:
            return
        self._held[session] = value
        self._size += value.size
        while self._size > self._budget or len(self._held) > self._limit:
            self._drop(next(iter(self._held)))

    def _drop(self, session: str) -> None:
        held = self._held.pop(session, None)
        if held is not None:
            self._size -= held.size


class _Lists(Generic[L]):
    """A session's lists by channel, and what they weigh together."""

    __slots__ = ("lists", "size")

    def __init__(self, lists: dict[str, L], size: int) -> None:
        self.lists = lists
        self.size = size


class HeldLists(SessionLRU[_Lists[L]]):
    """Per session, a list kept per channel."""

    def get(self, session: str, channel: str) -> L | None:
        with self._lock:
            held = self._held.get(session)
            return None if held is None else held.lists.get(channel)

    def keep(self, session: str, channel: str, kept: L) -> None:
        """``kept`` is now ``channel``'s list in ``session``, the most recently used."""
        with self._lock:
            held = self._held.get(session)
            lists, size = (held.lists, held.size) if held is not None else ({}, 0)
            old = lists.get(channel)
            size += kept.size - (old.size if old is not None else 0)
            self._store(session, _Lists({**lists, channel: kept}, size))
