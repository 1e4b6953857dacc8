"""Session-scoped Redis fixtures (private redis-server processes) for the suite.

Every test session, and every xdist worker (each is its own session), starts
its own ``redis-server`` on a free loopback port; the shared server on 6379 is
never touched. The same goes for a Sentinel group and a
3-primary Redis Cluster. Tests that pause, kill, restart or reconfigure a
server take ``private_redis`` (or a cluster of their own) instead: gone when
the test ends.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chatledger.testing._cluster import RedisCluster
from chatledger.testing._redis_server import RedisServer
from chatledger.testing._sentinel import SentinelGroup


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """One private server for the whole session: tests isolate by namespace."""
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="session")
def redis_url(redis_server: RedisServer) -> str:
    return redis_server.url


@pytest.fixture(scope="session")
def sentinel_group() -> Iterator[SentinelGroup]:
    """One private Sentinel group for the whole session: tests isolate by namespace.
    No failover unless the master is silent for 10 s: a 20 MB write on a loaded
    machine must not make this group fail over (the failover tests build their own)."""
    with SentinelGroup(down_after_ms=10_000) as group:
        yield group


@pytest.fixture(scope="session")
def sentinel_url(sentinel_group: SentinelGroup) -> str:
    return sentinel_group.url


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisCluster]:
    """One private 3-primary, 3-replica cluster for the whole session (per xdist worker).
    No failover unless a node is silent for 15 s: on a loaded machine a 20 MB write can
    stall a primary past the 1 s default (the failover tests build their own cluster)."""
    with RedisCluster(node_timeout_ms=15_000) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def cluster_url(redis_cluster: RedisCluster) -> str:
    return redis_cluster.url


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    """A server for one test only, free to be paused, killed or flushed."""
    with RedisServer() as server:
        yield server
