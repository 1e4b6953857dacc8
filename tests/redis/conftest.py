"""Helpers for the Redis-specific tests: stores on a chosen server, a raw client."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
import redis

from chatledger import Store
from chatledger._backends.redis.keys import SessionKeys
from chatledger.testing._redis_server import RedisServer
from tests.conftest import opener_on, retrying

__all__ = ["OpenRedis", "keys_of", "retrying", "scan_all"]

OpenRedis = Callable[..., Store]

# Stores on the session's server (or ``url=``): a fresh namespace, no retries.
open_redis = opener_on("redis_url")


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
