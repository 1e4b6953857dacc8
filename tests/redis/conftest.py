"""Helpers for the Redis-specific tests: stores on a chosen server, a raw client."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
import redis

from chatledger import RetryPolicy, Store
from chatledger._backends.redis.keys import SessionKeys
from chatledger.testing._redis_server import RedisServer
from tests.conftest import store_opener

OpenRedis = Callable[..., Store]


@pytest.fixture
def namespace() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def open_redis(redis_url: str, namespace: str) -> Iterator[OpenRedis]:
    """Open stores on the session's server (or ``url=``): a fresh namespace, no retries."""
    with store_opener(redis_url, namespace=namespace, retry=RetryPolicy.none()) as open_:
        yield open_


@pytest.fixture
def raw(redis_server: RedisServer) -> Iterator[redis.Redis]:
    """A plain redis-py client on the session's server, to look behind the store."""
    client = redis.Redis(host=redis_server.host, port=redis_server.port)
    yield client
    client.close()


def keys_of(store: Store, session: str) -> SessionKeys:
    return SessionKeys.of(store.namespace, session)


def scan_all(client: redis.Redis, pattern: bytes | str = "*") -> set[bytes]:
    """Every key matching ``pattern``, by SCAN."""
    return set(client.scan_iter(match=pattern, count=1000))


def retrying(attempts: int = 5, deadline: float = 10.0) -> RetryPolicy:
    return RetryPolicy(attempts=attempts, backoff=0.01, max_backoff=0.05, deadline=deadline)
