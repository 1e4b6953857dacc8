"""Fixtures for the LangChain adapter: real stores on SQLite files and private Redis."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from chatledger import Store, open_store
from chatledger.langchain import close_shared_stores

# The suite runs the adapter on every backend a deployment would use.
BACKENDS = ["sqlite", "redis", "postgres", "dynamodb"]


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL with a namespace of this test's own, on the backend under test."""
    namespace = f"lc-{uuid.uuid4().hex[:12]}"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/ledger.db?namespace={namespace}"
    server_url: str = request.getfixturevalue(f"{request.param}_url")
    return f"{server_url}{'&' if '?' in server_url else '?'}namespace={namespace}"


@pytest.fixture
def store(url: str) -> Iterator[Store]:
    with open_store(url) as opened:
        yield opened


@pytest.fixture(autouse=True)
def _close_shared_stores() -> Iterator[None]:
    """Stores that ``from_url`` opened live per process: close them after each test."""
    yield
    close_shared_stores()
