"""One SQLite connection per thread, for as long as the thread lives.

A connection is opened the first time a thread uses the store and closed when
that thread ends (or when the store closes), so a thread-per-request server
does not pile up open files. After a fork the parent's connections are
forgotten, never used or closed: SQLite forbids carrying a connection into a
child process, and closing the child's copy could checkpoint or unlink the
parent's WAL. The child even frees other threads' storage as it starts, so the
connections alive at a fork are pinned around it (``os.register_at_fork``).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from .._errors import BackendError

__all__ = ["ThreadConnections"]


class _Held:
    """A thread's connection; closed when the thread's local storage lets go of it.

    ``lock`` is held while the connection is in use, so that ``close()`` from
    another thread waits for the statement to end: closing a connection that
    another thread is using crashes the interpreter.
    """

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.lock = threading.RLock()
        self._closer = weakref.finalize(self, db.close)

    def close(self) -> None:
        self._closer()

    def pin(self) -> None:
        """Nothing may close it (around a fork)."""
        self._closer.detach()

    def unpin(self) -> None:
        self._closer = weakref.finalize(self, self.db.close)


class ThreadConnections:
    """Hands each thread its own connection made by ``connect``."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], where: str) -> None:
        self._connect = connect
        self._where = where
        self._closed = False
        self._reset()
        _everyone.add(self)

    def get(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use (for setup, not for statements)."""
        return self._held().db

    @contextmanager
    def use(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection, which ``close()`` will not close under it."""
        held = self._held()
        with held.lock:
            if self._closed:
                raise BackendError(f"the store {self._where} is closed")
            yield held.db

    def close(self) -> None:
        """Close every thread's connection once it is idle; later calls raise BackendError."""
        with self._lock:
            self._closed = True
            everyone = list(self._all)
        for held in everyone:
            with held.lock:
                held.close()

    def _held(self) -> _Held:
        if self._pid != os.getpid():
            self._forget_parent()
        held: _Held | None = getattr(self._local, "held", None)
        if held is None:
            with self._lock:
                if self._closed:
                    raise BackendError(f"the store {self._where} is closed")
                held = _Held(self._connect())
                self._all.add(held)
            self._local.held = held
        return held

    def __len__(self) -> int:
        """How many connections are open now."""
        return len(self._all)

    def connections(self) -> list[sqlite3.Connection]:
        return [held.db for held in list(self._all)]

    def _forget_parent(self) -> None:
        self._reset()  # the inherited ones stay pinned in this process for good

    def _reset(self) -> None:
        self._lock = threading.Lock()  # after a fork: the parent may have held it
        self._local = threading.local()
        self._all: weakref.WeakSet[_Held] = weakref.WeakSet()
        self._pid = os.getpid()


# Every store's connections, and those pinned while a fork is under way: the
# child keeps its pins forever, so its copies are never closed.
_everyone: weakref.WeakSet[ThreadConnections] = weakref.WeakSet()
_pinned: list[_Held] = []


def _pin_all() -> None:
    for connections in list(_everyone):
        for held in list(connections._all):
            held.pin()
            _pinned.append(held)


def _unpin_all() -> None:
    for held in _pinned:
        held.unpin()
    _pinned.clear()


os.register_at_fork(before=_pin_all, after_in_parent=_unpin_all)
