"""Loss detection for histories: what this process has seen of each session.

A history remembers the highest version it has seen of its session and the
ledger it saw it on; reading with ``min_version`` and ``ledger`` makes the
store raise MemoryLostError when it holds less or holds another ledger (lost,
then written again), and appending with ``ledger`` refuses to write onto
another ledger.
Histories of one session on one store share a watermark, because LangChain
makes a new history object per turn (``RunnableWithMessageHistory`` calls
``get_session_history`` every time); otherwise each would start from zero.

Everything a history knows about loss lives in :class:`Seen`.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .._errors import MemoryLostError
from .._results import Ack, History

__all__ = ["Seen", "Watermark", "shared_watermark"]

# Sessions remembered per store: a long-running server sees endless sessions;
# forgetting the least recent one only makes its next read unchecked.
MAX_SESSIONS_PER_STORE = 100_000


@dataclass(frozen=True)
class Seen:
    """A point of a session's ledger that was seen: it can only move forward."""

    version: int = 0
    ledger: str | None = None

    def read_floor(self) -> dict[str, Any]:
        """The ``read`` arguments that make the store raise MemoryLostError below this."""
        return {"min_version": self.version, "ledger": self.ledger}

    def append_guard(self) -> dict[str, Any]:
        """The ``append`` arguments that refuse to write onto another ledger than this."""
        return {"ledger": self.ledger}

    def check_ack(self, session: str, ack: Ack) -> None:
        """Raise MemoryLostError if ``ack`` landed on a ledger holding less than this.

        A deduplicated Ack describes the original append, which may be older
        than what was seen since: it says nothing about loss.
        """
        if not ack.deduplicated and ack.version < self.version:
            raise MemoryLostError(session, self.version, ack.version)

    def after(self, result: History | Ack) -> Seen:
        """What is seen once ``result`` is: never less than before."""
        return Seen(max(self.version, result.version), result.ledger or self.ledger)


class Watermark:
    """The highest point seen of one session; shared by threads and histories."""

    def __init__(self) -> None:
        self._seen = Seen()
        self._lock = threading.Lock()

    def seen(self) -> Seen:
        return self._seen

    def advance(self, result: History | Ack) -> None:
        with self._lock:
            self._seen = self._seen.after(result)

    def forget(self) -> None:
        """The session was deleted on purpose: start again from nothing."""
        with self._lock:
            self._seen = Seen()


class Unwatched(Watermark):
    """Loss detection turned off: never remembers anything."""

    def advance(self, result: History | Ack) -> None:
        pass


_registry: weakref.WeakKeyDictionary[object, OrderedDict[str, Watermark]] = (
    weakref.WeakKeyDictionary()
)
_registry_lock = threading.Lock()


def shared_watermark(store: object, session_id: str) -> Watermark:
    """The watermark of ``session_id`` on ``store``, the same for every caller."""
    with _registry_lock:
        sessions = _registry.setdefault(store, OrderedDict())
        watermark = sessions.get(session_id)
        if watermark is None:
            watermark = sessions[session_id] = Watermark()
            if len(sessions) > MAX_SESSIONS_PER_STORE:
                sessions.popitem(last=False)
        else:
            sessions.move_to_end(session_id)
        return watermark
