"""dynalite fixtures: a second DynamoDB emulator, one per test session (and xdist worker),
a table per test, for the opt-in ``dynalite`` case of the contract suite.

dynalite is installed by ``scripts/dynalite`` (``npm ci`` from the pinned
tests/dynalite/package-lock.json into tests/dynalite/node_modules, git-ignored);
a test that asks for it without that install fails, saying so.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chatledger.testing._dynalite_server import DynaliteServer

DYNALITE = Path(__file__).resolve().parent / "dynalite" / "node_modules" / ".bin" / "dynalite"


@pytest.fixture(scope="session")
def dynalite_server() -> Iterator[DynaliteServer]:
    with DynaliteServer(str(DYNALITE)) as server:
        yield server


@pytest.fixture
def dynalite_url(dynalite_server: DynaliteServer) -> str:
    """A new table's URL."""
    return dynalite_server.table_url()
