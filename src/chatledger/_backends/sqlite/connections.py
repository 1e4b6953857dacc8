"""A small pool of SQLite connections that any thread may borrow.

A statement runs on a connection borrowed for its transaction and given back
after, so a thread pool (LangGraph runs each step's saver calls on fresh
worker threads) reuses the few connections it needs instead of opening one
per thread: a new connection costs a ``connect``, its pragmas and its schema
read, and its first commit an extra ``fdatasync`` (of the directory, since it
opens the WAL file anew). At most ``MAX_IDLE`` idle connections are kept, so a
burst of threads does not leave open files behind. After a fork the parent's
connections are forgotten, never used or closed: SQLite forbids carrying a
connection into a child process, and closing the child's copy could
checkpoint or unlink the parent's WAL; the connections alive at a fork are
pinned around it (``os.register_at_fork``) so that nothing closes them.

Writes do not borrow: they run on the pool's write connection, in turn
(``writes.py``). A read of one statement takes the write connection when no
writer is at work: SQLite drops a connection's page cache whenever another
connection commits, so the write connection is the one whose pages are warm.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager

from ..._errors import BackendError
from .writes import GroupCommit

__all__ = ["ConnectionPool"]

MAX_IDLE = 8
"""Idle connections kept for the next borrower; more are closed as they come back."""


class _Held:
    """A connection; closed when nothing refers to it any more (or by ``close``).

    ``lock`` is held while the connection is lent, so that ``close()`` from
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


class ConnectionPool:
    """Lends connections made by ``connect``, one borrower at a time each."""

    _writer: _Held | None  # the write connection, held while the pool lives

    def __init__(self, connect: Callable[[], sqlite3.Connection], where: str,
                 timeout: float = 2.0) -> None:
        self._connect = connect
        self._where = where
        self._timeout = timeout
        self._closed = False
        self._reset()
        _everyone.add(self)

    def get(self) -> sqlite3.Connection:
        """The connection the next borrower on this thread gets (for setup and tests)."""
        with self.use() as db:
            return db

    def use(self, *, write: bool = False) -> AbstractContextManager[sqlite3.Connection]:
        """A connection of its own for the caller, which ``close()`` will not close under it;
        ``write``: the write connection, in a transaction that commits on leaving (once
        this pool's other writers are done, at most ``timeout`` seconds)."""
        if self._pid != os.getpid():
            self._forget_parent()
        return self._writes.turn() if write else _Loan(self)

    def read(self) -> AbstractContextManager[sqlite3.Connection]:
        """A connection for one statement that reads: the write connection when no
        writer is at work (its page cache holds what was last written: see
        :meth:`GroupCommit.lend_idle`), else one of the caller's own, as ``use()``."""
        if self._pid != os.getpid():
            self._forget_parent()
        return _Read(self)

    @property
    def writer_waits(self) -> int:
        """How many writers found another writer at work and waited for their turn."""
        return self._writes.waits

    def close(self) -> None:
        """Close every connection once it is idle; later calls raise BackendError."""
        self._writes.close()
        with self._lock:
            self._closed = True
            everyone = list(self._all)
            self._idle.clear()
            self._writer = None
        for held in everyone:
            with held.lock:
                held.close()

    def _borrow(self) -> _Held:
        with self._lock:
            if self._closed:
                raise BackendError(f"the store {self._where} is closed")
            if self._idle:
                return self._idle.pop()  # the most recent: its pages are warm
        held = _Held(self._connect())  # outside the lock: connecting may wait on the file
        with self._lock:
            self._all.add(held)
        return held

    def _give_back(self, held: _Held) -> None:
        with self._lock:
            if self._pid == os.getpid() and not self._closed and len(self._idle) < MAX_IDLE:
                self._idle.append(held)
                return
        if self._pid == os.getpid():
            with held.lock:
                held.close()

    def _write_connection(self) -> sqlite3.Connection:
        """A connection for the writes alone, closed with the others (or pinned at a fork)."""
        held = _Held(self._connect())
        with self._lock:
            self._all.add(held)
            self._writer = held  # the writes hold its connection, not the _Held
        return held.db

    def __len__(self) -> int:
        """How many connections are open now."""
        return len(self._all)

    def connections(self) -> list[sqlite3.Connection]:
        return [held.db for held in list(self._all)]

    def _forget_parent(self) -> None:
        self._reset()  # the inherited ones stay pinned in this process for good

    def _reset(self) -> None:
        self._lock = threading.Lock()  # after a fork: the parent may have held it
        self._writes = GroupCommit(self._write_connection, self._where, self._timeout)
        self._writer = None
        self._idle: list[_Held] = []
        self._all: weakref.WeakSet[_Held] = weakref.WeakSet()
        self._pid = os.getpid()


class _Loan:
    """A borrowed connection for one ``with`` block, given back on leaving it (a class,
    not a generator: every read takes one, and a generator's frame costs more)."""

    __slots__ = ("_held", "_pool")

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def __enter__(self) -> sqlite3.Connection:
        held = self._held = self._pool._borrow()
        held.lock.acquire()
        if self._pool._closed:
            self.__exit__(None, None, None)
            raise BackendError(f"the store {self._pool._where} is closed")
        return held.db

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        self._held.lock.release()
        self._pool._give_back(self._held)


class _Read:
    """One read's connection (:meth:`ConnectionPool.read`): the idle write connection,
    or a loan."""

    __slots__ = ("_loan", "_pool")

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def __enter__(self) -> sqlite3.Connection:
        db = self._pool._writes.lend_idle()
        if db is not None:
            self._loan: _Loan | None = None
            return db
        loan = self._loan = _Loan(self._pool)
        return loan.__enter__()

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        if self._loan is None:
            self._pool._writes.end_read()
        else:
            self._loan.__exit__(kind, exc, tb)


# Every store's connections, and those pinned while a fork is under way: the
# child keeps its pins forever, so its copies are never closed.
_everyone: weakref.WeakSet[ConnectionPool] = weakref.WeakSet()
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
