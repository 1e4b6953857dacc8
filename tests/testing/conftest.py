"""Fixtures for the testing-kit tests: a private redis-server and a proxy in front of it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chatledger.testing._proxy import FaultProxy
from chatledger.testing._redis_server import RedisServer
from tests.testing._sockets import proxy_threads


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture
def proxy(redis: RedisServer) -> Iterator[FaultProxy]:
    with FaultProxy(redis.host, redis.port) as running:
        yield running
    assert proxy_threads() == []
