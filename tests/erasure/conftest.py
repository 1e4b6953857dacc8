"""Servers of the erasure tests' own (one set per xdist worker, for this folder).

The erasure tests read everything a server holds (``_raw.records``: every row,
every key on every node) to prove nothing of the user is left. On the session's
shared servers that was every earlier test's data too (the contract's 20 MB
entries, thousands of racing appends), read and compared several times a test:
most of these tests' time, growing with what ran before them. Here Redis,
Sentinel and Cluster are servers of this folder's alone, and PostgreSQL a
database of its own on the session's server: "nothing left anywhere" still
covers all the server holds, which is now only what these tests wrote.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest

from chatledger import open_store
from chatledger.testing._cluster import RedisCluster
from chatledger.testing._postgres_server import PostgresServer
from chatledger.testing._redis_server import RedisServer
from chatledger.testing._sentinel import SentinelGroup


@pytest.fixture(scope="package")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="package")
def redis_url(redis_server: RedisServer) -> str:
    return redis_server.url


@pytest.fixture(scope="package")
def sentinel_group() -> Iterator[SentinelGroup]:
    """As the session's (tests/redis_fixtures.py): no failover under a loaded machine."""
    with SentinelGroup(down_after_ms=10_000) as group:
        yield group


@pytest.fixture(scope="package")
def sentinel_url(sentinel_group: SentinelGroup) -> str:
    return sentinel_group.url


@pytest.fixture(scope="package")
def redis_cluster() -> Iterator[RedisCluster]:
    """As the session's (tests/redis_fixtures.py): no failover under a loaded machine."""
    with RedisCluster(node_timeout_ms=15_000) as cluster:
        yield cluster


@pytest.fixture(scope="package")
def cluster_url(redis_cluster: RedisCluster) -> str:
    return redis_cluster.url


@pytest.fixture(scope="package")
def postgres_url(postgres_server: PostgresServer) -> str:
    """A database of this folder's own on the session's server, its schema created."""
    name = f"erasure_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.url, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    url = f"{postgres_server.url.rsplit('/', 1)[0]}/{name}"
    open_store(f"{url}?migrate=true").close()  # as tests/postgres_fixtures.py's migrated
    return url
