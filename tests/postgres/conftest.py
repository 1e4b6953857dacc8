"""Helpers for the PostgreSQL tests: stores on the session's server, a raw connection."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import psycopg
import pytest

from chatledger import Store
from tests.conftest import opener_on, retrying

__all__ = ["OpenPostgres", "retrying"]

OpenPostgres = Callable[..., Store]

# Stores on the session's server (or ``url=``): a fresh namespace, no retries.
open_postgres = opener_on("postgres_url")


@pytest.fixture
def raw(postgres_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A plain psycopg connection to the session's server, to look behind the store."""
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        yield connection
