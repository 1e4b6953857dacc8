"""Timing a call that must fail with BackendUnavailable instead of hanging."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from chatledger import BackendUnavailable

# These tests prove "raises instead of hanging", not speed: a hang is unbounded,
# so the bound is the promised time plus a slack wide enough for a loaded machine.
SLACK = 4.0


def unavailable_in(operation: Callable[[], object]) -> float:
    """Seconds ``operation`` took to raise BackendUnavailable (it must raise it)."""
    started = time.monotonic()
    with pytest.raises(BackendUnavailable):
        operation()
    return time.monotonic() - started
