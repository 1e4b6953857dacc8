"""Helpers for the Redis-specific tests: stores on a chosen server, a raw client."""

from __future__ import annotations

import struct
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


BUCKET = b"\xfe"  # an ids hash field holding UUID records (scripts._INDEX)
RECORD = 28  # a record: the UUID's 16 bytes, then seq, batch_first, batch_last (u32, big-endian)


def index_entries(client: redis.Redis, keys: SessionKeys) -> dict[bytes, bytes]:
    """Every id the session's ids hash holds, named as calls.index_key names it (bytes),
    with its "seq:batch_first:batch_last", whichever layout the session has."""
    entries: dict[bytes, bytes] = {}
    for name, value in client.hgetall(keys.ids).items():
        if not name.startswith(BUCKET):
            entries[name] = value
            continue
        assert len(value) % RECORD == 0, f"bucket {name!r} is not whole records"
        for at in range(0, len(value), RECORD):
            seq, first, last = struct.unpack(">III", value[at + 16 : at + RECORD])
            entries[b"\xff" + value[at : at + 16]] = b"%d:%d:%d" % (seq, first, last)
    return entries


def scan_all(client: redis.Redis, pattern: bytes | str = "*") -> set[bytes]:
    """Every key matching ``pattern``, by SCAN."""
    return set(client.scan_iter(match=pattern, count=1000))


def retrying(attempts: int = 5, deadline: float = 10.0) -> RetryPolicy:
    return RetryPolicy(attempts=attempts, backoff=0.01, max_backoff=0.05, deadline=deadline)
