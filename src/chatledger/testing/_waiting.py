"""Waiting for a topology of servers to reach a state: one loop for every helper."""

from __future__ import annotations

import time
from collections.abc import Callable

from ._resp import RedisCommandError

__all__ = ["wait_until"]

POLL = 0.05  # seconds between two looks


def wait_until(condition: Callable[[], bool], what: str, timeout: float, *, who: str,
               tolerated: tuple[type[Exception], ...] = ()) -> None:
    """Ask ``condition`` until it holds; RuntimeError naming ``what`` after ``timeout``.

    A server paused, restarting or not yet agreed raises while it is asked:
    those errors (and ``tolerated`` ones) mean "not yet", not failure.
    """
    not_yet: tuple[type[Exception], ...] = (OSError, RedisCommandError, RuntimeError,
                                            *tolerated)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except not_yet:
            pass  # not yet: ask again
        time.sleep(POLL)
    raise RuntimeError(f"{who} waited in vain for {what}")
