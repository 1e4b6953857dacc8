"""The session's turn for appends from threads (``_backends.turns.Turns``): a call
whose deadline passes while another append holds the turn gives up, in the store's
words, and leaves the turn as it found it."""

from __future__ import annotations

import time

import pytest

from chatledger import BackendUnavailable
from chatledger._backends.turns import Turns
from chatledger._deadline import CALL_DEADLINE


def test_a_turn_not_handed_on_before_the_deadline_is_given_up() -> None:
    turns = Turns()
    with turns.of("s", "here"):
        token = CALL_DEADLINE.set(time.monotonic() - 1.0)  # passed already
        try:
            with pytest.raises(BackendUnavailable, match=r"^here: the call's deadline"), \
                    turns.of("s", "here"):
                pytest.fail("the turn is held: this block must not run")
        finally:
            CALL_DEADLINE.reset(token)
        assert list(turns._waiting["s"]) == []  # the given-up wait left the queue
    assert turns._waiting == {}
    with turns.of("s", "here"):  # free again
        assert "s" in turns._waiting
