"""A backend's appends to one session, one at a time, in order of arrival.

Appends of one backend to one session racing each other through the server only
waste work: on DynamoDB a lost transaction, retried, and starvation (a writer
that lost backs off while the others, not backing off, win again; under load
one lost 19 races in a row until its call's deadline); on PostgreSQL an append
planned from a state that another of this process's appends is changing, sent
again, and a pooled connection held waiting on the session's lock. In line they
cost one request each; races are left to writers of other backends and
processes.

:class:`AsyncTurns` for the async backends (tasks on one loop: ``asyncio.Lock``
wakes its waiters in order, and a waiter is cancelled at its call's deadline like
any await); :class:`Turns` for their sync twins (threads).
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from .._deadline import time_left
from .._errors import BackendUnavailable

__all__ = ["AsyncTurns", "Turns"]


class AsyncTurns:
    """The session's appends on one event loop, in line."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}  # session -> lock, its users

    @asynccontextmanager
    async def of(self, session: str, where: str) -> AsyncIterator[None]:
        """The session's turn, held for the block (``where``: for the sync twin's error)."""
        lock, users = self._locks.get(session) or (asyncio.Lock(), 0)
        self._locks[session] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[session]
            if users == 1:
                del self._locks[session]
            else:
                self._locks[session] = (lock, users - 1)


class Turns:
    """The session's appends from threads, in line.

    A queue of events rather than a ``threading.Lock``, which keeps no order (the thread
    that just appended could take it again, and again), and a wait bounded by the call's
    deadline, which no I/O here would bound.
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._waiting: dict[str, deque[threading.Event]] = {}  # a session's, while held

    def of(self, session: str, where: str) -> _Turn:
        """The session's turn, held for the block (``where``: the backend, for an error)."""
        return _Turn(self, session, where)


class _Turn:
    """A session's turn, as a context manager (a class: every sync append takes one;
    taken and handed on here, without a call more)."""

    __slots__ = ("_session", "_turns", "_where")

    def __init__(self, turns: Turns, session: str, where: str) -> None:
        self._turns, self._session, self._where = turns, session, where

    def __enter__(self) -> None:
        turns, session = self._turns, self._session
        with turns._mutex:
            waiting = turns._waiting.get(session)
            if waiting is None:  # nearly always: nobody holds it
                turns._waiting[session] = deque()
                return
            turn = threading.Event()
            waiting.append(turn)
        left = time_left()
        if turn.wait(None if left is None else max(0.0, left)):
            return
        with turns._mutex:
            if turn.is_set():  # handed on as the wait ended: the turn is this call's
                return
            waiting.remove(turn)
        raise BackendUnavailable(
            f"{self._where}: the call's deadline (retry.deadline) passed while this "
            f"process's other appends to session {session!r} went first; an append may "
            "or may not have been stored: appending the same messages again is safe")

    def __exit__(self, *exc: object) -> None:
        turns = self._turns
        with turns._mutex:
            waiting = turns._waiting[self._session]
            if waiting:
                waiting.popleft().set()
            else:
                del turns._waiting[self._session]
