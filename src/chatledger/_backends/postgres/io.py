"""psycopg's failures as chatledger's, and the bound on a hung server.

What a retry may fix is BackendUnavailable: a connection that failed or was
cut (``OperationalError``, which covers a refused or lost connection, a pool
with no free connection in time, an admin shutdown, a serialization failure
and a deadlock), a closed connection, a standby that refuses writes.
Anything else psycopg raises is BackendError.

A server that stops answering (SIGSTOP, a dead network) keeps a read blocked:
:func:`abort_at_deadline` (sync: chatledger's watchdog thread) and
:func:`aabort_at_deadline` (async: a timer on the loop, a little before the
deadline's cancellation, whose own clean-up would wait on the hung server)
shut the connection's socket down when the store call's deadline passes, so
the read fails at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Iterator
from contextlib import AbstractContextManager
from functools import partial
from typing import Any

import psycopg
import psycopg.errors

from ..._deadline import time_left
from ..._errors import BackendError, BackendUnavailable
from ..._watchdog import guard

__all__ = ["aabort_at_deadline", "abort_at_deadline", "first_line", "translated",
           "translation"]

_TRANSIENT = (psycopg.OperationalError, psycopg.InterfaceError,
              psycopg.errors.ReadOnlySqlTransaction)
_ASYNC_LEAD = 0.05  # seconds before the deadline's cancellation


@contextlib.contextmanager
def translated(where: str) -> Iterator[None]:
    """Raise psycopg's errors as BackendUnavailable or BackendError, naming ``where``."""
    try:
        yield
    except psycopg.Error as exc:
        raise translation(exc, where) from exc


def translation(exc: psycopg.Error, where: str) -> BackendError | BackendUnavailable:
    """psycopg's error as chatledger's: BackendUnavailable when a retry may fix it."""
    if isinstance(exc, _TRANSIENT):
        return BackendUnavailable(f"postgresql {where}: {first_line(exc)}")
    return BackendError(f"postgresql {where}: {first_line(exc)}")


def shut_down(connection: Any) -> None:
    """Cut the connection's socket: a read blocked on it fails at once."""
    with contextlib.suppress(OSError, psycopg.Error):
        fd = connection.pgconn.socket
        with socket.socket(fileno=os.dup(fd)) as sock:
            sock.shutdown(socket.SHUT_RDWR)


def abort_at_deadline(connection: Any) -> AbstractContextManager[None]:
    """Shut ``connection`` down if the store call's deadline passes while it is used
    (the watchdog's guard itself: every sync call enters one, no generator around it)."""
    return guard(partial(shut_down, connection))


@contextlib.contextmanager
def aabort_at_deadline(connection: Any) -> Iterator[None]:
    """The same on an event loop: a timer, fired just before the attempt is cancelled."""
    left = time_left()
    if left is None:
        yield
        return
    loop = asyncio.get_running_loop()
    delay = max(0.0, left - _ASYNC_LEAD)
    timer = loop.call_later(delay, shut_down, connection)
    try:
        yield
    finally:
        timer.cancel()


def first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
