"""``memory://``: an in-process store for unit tests and notebooks.

``memory://`` is private to one store; ``memory://NAME`` is shared by every
store of this process opened with the same name, so two "pods" of a test can
talk to one memory. Entries are kept encoded, exactly as other backends keep
them, so the codec and its failures behave the same everywhere.

This module holds the state; the backend is
:class:`~chatledger._backends.memory._async.backend.AsyncMemoryBackend` and its
generated sync twin. One lock per memory makes each operation atomic, for
threads and coroutines alike: no step awaits anything, so a coroutine never
yields the event loop while it holds the lock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ..contract import RawInfo, StoredId

__all__ = ["Ledger", "Memory", "memory_for"]


@dataclass
class Ledger:
    """One session: its state, and ``entries[i]`` holding seq ``state.first_seq + i``."""

    state: RawInfo | None = None
    entries: list[bytes] = field(default_factory=list)
    ids: dict[str, StoredId] = field(default_factory=dict)


class Memory:
    """The shared state behind one memory:// name: namespace -> session -> ledger,
    and the user index: namespace -> user -> the ids of that user's sessions."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.namespaces: dict[str, dict[str, Ledger]] = {}
        self.users: dict[str, dict[str, set[str]]] = {}


_named: dict[str, Memory] = {}
_named_lock = threading.Lock()


def memory_for(name: str) -> Memory:
    """A fresh memory for ``memory://``, the process's shared one for ``memory://NAME``."""
    if not name:
        return Memory()
    with _named_lock:
        return _named.setdefault(name, Memory())
