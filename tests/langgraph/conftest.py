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
EVERY_BACKEND = ["memory", "sqlite", "redis", "sentinel", "cluster", "postgres", "dynamodb"]
# Where the saver's matrices run each durability mode with both savers. The mode
# changes when LangGraph calls the saver (each step, in the background, or once at
# the exit), not which backend code runs: in process, and on a file.
DURABILITY_BACKENDS = ("memory", "sqlite")
# Where they run the async saver besides. Its code is the sync one's source, and an
# async backend's I/O is the contract suite's (tests/backends.py, the -async cases):
# a server reached through its async client once is enough here (Redis: the cheapest;
# the async saver meets every backend in test_conformance.py).
ASYNC_BACKENDS = (*DURABILITY_BACKENDS, "redis")
DEFAULT_DURABILITY = "async"  # LangGraph's


def saver_matrix(durabilities: tuple[str, ...] = ()) -> list[Any]:
    """Params for a saver test: every backend with the sync saver; both savers on
    ``DURABILITY_BACKENDS`` and the async one on ``ASYNC_BACKENDS`` besides.

    ``(backend, kind)``; with ``durabilities``, ``(backend, kind, durability)``: every
    backend on LangGraph's default mode (the first mode if it is not among them),
    each mode with both savers on ``DURABILITY_BACKENDS`` only.
    """
    default = DEFAULT_DURABILITY if DEFAULT_DURABILITY in durabilities else (
        durabilities[0] if durabilities else "")
    cases = [(backend, "sync", default) for backend in EVERY_BACKEND]
    cases += [(backend, kind, mode) for backend in DURABILITY_BACKENDS
              for kind in ("sync", "async") for mode in durabilities or (default,)]
    cases += [(backend, "async", default) for backend in ASYNC_BACKENDS]
    unique = list(dict.fromkeys(cases))
    if not durabilities:
        return [pytest.param(b, k, id=f"{b}-{k}") for b, k, _ in unique]
    return [pytest.param(b, k, d, id=f"{b}-{k}-{d}") for b, k, d in unique]


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
