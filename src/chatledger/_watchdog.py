"""Aborting blocking I/O that outlives its store call's deadline (sync only).

A socket timeout bounds each ``recv``, not a reply: a server (or a network)
that drips a reply a byte at a time keeps a sync call reading for as long as
it likes. While a read runs, :func:`guard` registers how to abort it (shut the
socket down) with one daemon thread per process, which calls it if the call's
deadline (:data:`chatledger._deadline.CALL_DEADLINE`) passes first; the
blocked read then fails and the store reports ``BackendUnavailable``. Async
calls need none of this: their attempts are cancelled.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext

from ._deadline import CALL_DEADLINE

__all__ = ["POLL", "guard"]

POLL = 0.05  # seconds between two looks at the guarded reads: the bound's precision


class _Watchdog:
    """Guarded reads and the thread that aborts the late ones."""

    def __init__(self) -> None:
        self._guarded: dict[int, tuple[float, Callable[[], None]]] = {}
        self._tickets = itertools.count()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._started = False  # its thread; a forked child (no threads) starts afresh
        self._polling = False  # the thread looks every POLL until no read is guarded

    def guard(self, abort: Callable[[], None]) -> _Guard | nullcontext[None]:
        deadline = CALL_DEADLINE.get()
        if deadline is None:  # not inside a store call: nothing to bound
            return _UNGUARDED
        return _Guard(self, deadline, abort)

    def watch(self, deadline: float, abort: Callable[[], None]) -> int:
        """Register a read; wake the thread only if it is not polling already."""
        ticket = next(self._tickets)
        with self._lock:
            self._ensure_thread()
            self._guarded[ticket] = (deadline, abort)
            idle, self._polling = not self._polling, True
        if idle:
            self._wake.set()
        return ticket

    def unwatch(self, ticket: int) -> None:
        with self._lock:
            self._guarded.pop(ticket, None)

    def _ensure_thread(self) -> None:
        # A flag, not the pid compared (a getpid syscall every read): a forked child's
        # watchdog is made again (register_at_fork below), its flag down.
        if not self._started:
            self._started = True
            threading.Thread(target=self._run, name="chatledger-watchdog", daemon=True).start()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            while self._abort_late():
                time.sleep(POLL)

    def _abort_late(self) -> bool:
        """Abort the reads past their deadline; return whether any read is still guarded.

        Under the lock, so that a read whose guard has ended (its connection
        back in the pool, maybe in another call's hands) is never aborted.
        """
        now = time.monotonic()
        with self._lock:
            late = [ticket for ticket, (deadline, _) in self._guarded.items() if deadline <= now]
            for ticket in late:
                self._guarded.pop(ticket)[1]()
            self._polling = bool(self._guarded)
            return self._polling


class _Guard:
    """One guarded read, as a context manager (a class: every sync read enters one)."""

    __slots__ = ("_abort", "_deadline", "_ticket", "_watchdog")

    def __init__(self, watchdog: _Watchdog, deadline: float, abort: Callable[[], None]) -> None:
        self._watchdog, self._deadline, self._abort = watchdog, deadline, abort
        self._ticket = -1

    def __enter__(self) -> None:
        self._ticket = self._watchdog.watch(self._deadline, self._abort)

    def __exit__(self, *exc: object) -> None:
        self._watchdog.unwatch(self._ticket)


_UNGUARDED: nullcontext[None] = nullcontext()
_WATCHDOG = _Watchdog()
# A forked child inherits the parent's guarded reads (their sockets are shared
# with the parent: aborting them would kill the parent's calls) and maybe a
# lock held by a thread that does not exist in the child: it starts afresh.
os.register_at_fork(after_in_child=lambda: _Watchdog.__init__(_WATCHDOG))


guard = _WATCHDOG.guard
"""``with guard(abort):`` calls ``abort()`` if the store call's deadline passes first.

``abort`` runs on the watchdog's thread and must not block (shut a socket down).
"""
