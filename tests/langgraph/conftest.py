"""Fixtures for the LangGraph checkpointer: stores on every backend a deployment uses."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chatledger import RetryPolicy
from chatledger.langgraph import LedgerSaver
from tests.conftest import FakeClock
from tests.langgraph._blocking import BlockingSaver

BACKENDS = ["memory", "sqlite", "redis", "postgres"]


def backend_url(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL with a namespace of this test's own, on backend ``name``."""
    namespace = f"lg-{uuid.uuid4().hex[:12]}"
    base = {
        "memory": lambda: f"memory://{uuid.uuid4().hex}",
        "sqlite": lambda: f"sqlite:///{tmp_path}/ledger.db",
        "redis": lambda: request.getfixturevalue("redis_url"),
        "sentinel": lambda: request.getfixturevalue("sentinel_url"),
        "cluster": lambda: request.getfixturevalue("cluster_url"),
        "postgres": lambda: request.getfixturevalue("postgres_url"),
        "dynamodb": lambda: request.getfixturevalue("dynamodb_url"),
    }[name]()
    return f"{base}{'&' if '?' in base else '?'}namespace={namespace}"


@pytest.fixture(params=BACKENDS)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(request.param, request, tmp_path)


@pytest.fixture(params=["sync", "async"])
def saver(url: str, request: pytest.FixtureRequest) -> Iterator[LedgerSaver]:
    """The sync saver, or the async one through the sync method names."""
    kind: Any = LedgerSaver if request.param == "sync" else BlockingSaver
    with kind.from_url(url, retry=RetryPolicy.none()) as opened:
        yield opened


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(params=["sqlite", "redis", "postgres"])
def shared_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store several processes can share (memory:// lives in one process)."""
    return backend_url(request.param, request, tmp_path)
