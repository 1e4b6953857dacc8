"""The table of backends the contract suite runs on.

A new backend adds one ``BackendCase`` here: how to get its URL for a test,
whether its expiry clock can be injected, and how to write a garbage entry
straight into its storage (for the corrupt-entry promise).
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from chatledger import Store

UrlFactory = Callable[[pytest.FixtureRequest, Path], str]
Corrupter = Callable[[Store, str, int, bytes], None]


@dataclass(frozen=True)
class BackendCase:
    name: str
    url: UrlFactory
    corrupt: Corrupter
    injectable_clock: bool = True
    multiprocess: bool = True  # can several processes share one store?


def _memory_corrupt(store: Store, session: str, seq: int, blob: bytes) -> None:
    ledger: Any = store._backend._sessions[session]  # type: ignore[attr-defined]
    ledger.entries[seq - ledger.first_seq] = blob


def _sqlite_corrupt(store: Store, session: str, seq: int, blob: bytes) -> None:
    with sqlite3.connect(store._backend.path) as db:  # type: ignore[attr-defined]
        updated = db.execute(
            "UPDATE entries SET body = ? WHERE ns = ? AND sid = ? AND seq = ?",
            (blob, store.namespace, session, seq),
        ).rowcount
    assert updated == 1, "the entry to corrupt was not found"


CASES: dict[str, BackendCase] = {
    "memory": BackendCase(
        "memory", lambda request, tmp: f"memory://{uuid.uuid4().hex}", _memory_corrupt,
        multiprocess=False,
    ),
    "sqlite": BackendCase("sqlite", lambda request, tmp: f"sqlite:///{tmp}/ledger.db",
                          _sqlite_corrupt),
    # A private redis-server per test session (tests/redis_fixtures.py); the server's
    # own clock expires keys, so time cannot be faked.
    "redis": BackendCase(
        "redis", lambda request, tmp: request.getfixturevalue("redis_url"),
        lambda *args: __import__("tests.redis_fixtures").redis_fixtures.corrupt_entry(*args),
        injectable_clock=False,
    ),
    # The same through a private Sentinel group: a master, a replica, three sentinels.
    "sentinel": BackendCase(
        "sentinel", lambda request, tmp: request.getfixturevalue("sentinel_url"),
        lambda *args: __import__("tests.redis_fixtures").redis_fixtures.corrupt_entry(*args),
        injectable_clock=False,
    ),
}
