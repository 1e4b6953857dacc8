"""The table of backends the contract suite runs on.

A new backend adds one ``BackendCase`` here: how to get its URL for a test,
whether its expiry clock can be injected, and whether several processes can
share it. Each case runs twice: through the sync store, and (``-async``)
through the async store and the backend's async form, seen through
:mod:`tests.blocking`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from chatledger import open_store
from tests.blocking import open_blocking_store

UrlFactory = Callable[[pytest.FixtureRequest, Path], str]


@dataclass(frozen=True)
class BackendCase:
    name: str
    url: UrlFactory
    injectable_clock: bool = True
    multiprocess: bool = True  # can several processes share one store?
    is_async: bool = False
    # Runs of the model-based test (tests/contract/test_model.py). The ledger rules
    # are checked at full length on memory and SQLite, and at half on standalone
    # Redis (its Lua scripts); Sentinel and Cluster run the same scripts, and an
    # async case the code its sync twin is generated from, so a shorter run there
    # checks their I/O layers (cluster-async at full length alone took 110 s of
    # the suite's 10 minutes).
    model_examples: int = 100

    def open(self, url: str, **options: Any) -> Any:
        """A store of this case: sync, or async behind a blocking view."""
        return (open_blocking_store if self.is_async else open_store)(url, **options)

    @staticmethod
    def corrupt(store: Any, session: str, seq: int, blob: bytes) -> None:
        """Write a garbage entry straight into the backend (promise 7's second half)."""
        store._backend.corrupt_entry(session, seq, blob)


_SYNC = [
    BackendCase("memory", lambda request, tmp: f"memory://{uuid.uuid4().hex}", multiprocess=False),
    BackendCase("sqlite", lambda request, tmp: f"sqlite:///{tmp}/ledger.db"),
    # A private redis-server per test session (tests/redis_fixtures.py); the server's
    # own clock expires keys, so time cannot be faked.
    BackendCase("redis", lambda request, tmp: request.getfixturevalue("redis_url"),
                injectable_clock=False, model_examples=50),
    # The same through a private Sentinel group: a master, a replica, three sentinels.
    BackendCase("sentinel", lambda request, tmp: request.getfixturevalue("sentinel_url"),
                injectable_clock=False, model_examples=15),
    # A private Redis Cluster: three primaries, a replica each. Fewer model runs: each
    # opens a cluster client (topology, six connections), and the rules the model
    # checks are the standalone scripts', which the redis case runs 100 times.
    BackendCase("cluster", lambda request, tmp: request.getfixturevalue("cluster_url"),
                injectable_clock=False, model_examples=12),
    # A private PostgreSQL per test session (tests/postgres_fixtures.py): initdb
    # and postgres on a free loopback port; expiry uses the store's clock.
    BackendCase("postgres", lambda request, tmp: request.getfixturevalue("postgres_url"),
                model_examples=20),
]
# The native async backends; SQLite's async form is its sync one in threads,
# which tests/contract/test_async.py covers.
_ASYNC = [replace(case, name=f"{case.name}-async", is_async=True,
                  model_examples=min(case.model_examples, 12))
          for case in _SYNC if case.name != "sqlite"]

CASES: dict[str, BackendCase] = {case.name: case for case in (*_SYNC, *_ASYNC)}
