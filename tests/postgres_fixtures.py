"""Session-scoped PostgreSQL fixtures: a private server per test session.

Every test session, and every xdist worker, runs its own ``postgres`` on a
free loopback port (:class:`PostgresServer`: ``initdb`` once a process, each
cluster after a copy of that first one); the shared
server on 5432 is never touched. A server that cannot start fails the tests
that need it, loudly. Tests that pause, kill or restart a server take
``private_postgres``: gone when the test ends.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chatledger import open_store
from chatledger.testing._pgvector_server import pgvector_server as started_pgvector_server
from chatledger.testing._postgres_server import PostgresServer


def migrated(server: PostgresServer) -> str:
    """The server's URL, its chatledger schema created (as ``migrate-schema`` does)."""
    open_store(f"{server.url}?migrate=true").close()
    return server.url


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One private server for the whole session: tests isolate by namespace."""
    with PostgresServer() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    return migrated(postgres_server)


@pytest.fixture
def private_postgres() -> Iterator[PostgresServer]:
    """A server for one test only, free to be paused, killed or restarted."""
    with PostgresServer() as server:
        yield server


@pytest.fixture(scope="session")
def pgvector_server() -> Iterator[PostgresServer]:
    """A private server with the ``vector`` extension created (pgserver's binaries);
    one that cannot start fails the tests that need it, never skips them."""
    server = started_pgvector_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def pgvector_url(pgvector_server: PostgresServer) -> str:
    return migrated(pgvector_server)
