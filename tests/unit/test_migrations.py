"""The migration mechanism every backend with a schema uses: which steps, in which order."""

from __future__ import annotations

import pytest

from chatledger import ConfigError
from chatledger._backends.migrations import Migrations

STEPS = Migrations(["create", "add a column", "add an index"])


def test_a_store_gets_the_steps_it_lacks_in_order_each_with_the_version_it_makes() -> None:
    assert STEPS.current == 3
    assert STEPS.pending(0, "x") == [(1, "create"), (2, "add a column"), (3, "add an index")]
    assert STEPS.pending(2, "x") == [(3, "add an index")]
    assert STEPS.pending(3, "x") == []


def test_a_store_newer_than_the_code_is_refused_by_name() -> None:
    with pytest.raises(ConfigError) as refused:
        STEPS.pending(4, "sqlite:///app.db")
    assert str(refused.value) == ("sqlite:///app.db: the chatledger schema is at version 4, "
                                  "newer than this chatledger's 3: upgrade chatledger")
    STEPS.check_not_newer(3, "x")  # its own version is fine

