"""Helpers for the PostgreSQL tests: stores on the session's server, a raw connection."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import psycopg
import pytest

from chatledger import RetryPolicy, Store
from tests.conftest import store_opener

OpenPostgres = Callable[..., Store]


@pytest.fixture
def namespace() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def open_postgres(postgres_url: str, namespace: str) -> Iterator[OpenPostgres]:
    """Open stores on the session's server (or ``url=``): a fresh namespace, no retries."""
    with store_opener(postgres_url, namespace=namespace, retry=RetryPolicy.none()) as open_:
        yield open_


@pytest.fixture
def raw(postgres_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A plain psycopg connection to the session's server, to look behind the store."""
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        yield connection


def retrying(attempts: int = 8, deadline: float = 10.0) -> RetryPolicy:
    return RetryPolicy(attempts=attempts, backoff=0.01, max_backoff=0.05, deadline=deadline)
