"""The watchdog aborts a guarded read past its call's deadline, in a forked child too
(its thread does not survive the fork: the child's watchdog starts one of its own)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from chatledger._deadline import CALL_DEADLINE
from chatledger._watchdog import guard


def _aborted_past_the_deadline() -> bool:
    """A read guarded with a deadline 50 ms away: whether its abort runs (within 20 s)."""
    aborted = threading.Event()
    token = CALL_DEADLINE.set(time.monotonic() + 0.05)
    try:
        with guard(aborted.set):
            return aborted.wait(20)
    finally:
        CALL_DEADLINE.reset(token)


def test_a_read_past_its_deadline_is_aborted_and_one_ended_in_time_is_not() -> None:
    assert _aborted_past_the_deadline()
    spared = threading.Event()
    token = CALL_DEADLINE.set(time.monotonic() + 60)
    try:
        with guard(spared.set):
            pass
    finally:
        CALL_DEADLINE.reset(token)
    assert _aborted_past_the_deadline()  # the thread still runs; the ended read was let go
    assert not spared.is_set()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_s_reads_are_aborted_by_its_own_watchdog() -> None:
    assert _aborted_past_the_deadline()  # the parent's thread is running
    child = os.fork()
    if child == 0:  # pragma: no cover (the child: its exit code is the verdict)
        os._exit(0 if _aborted_past_the_deadline() else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
