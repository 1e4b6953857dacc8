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
RECORD = 26  # the UUID's 16 bytes halves swapped, its seq (u32), then how far its batch
#              reaches before and after it (u24 each), big-endian


def record(message_id: str, seq: int, batch_first: int, batch_last: int) -> bytes:
    """The record of a UUID id in a bucket, as the APPEND script writes it."""
    raw = bytes.fromhex(message_id.replace("-", ""))
    return (raw[8:] + raw[:8] + struct.pack(">I", seq) + (seq - batch_first).to_bytes(3, "big")
            + (batch_last - seq).to_bytes(3, "big"))


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
            (seq,) = struct.unpack(">I", value[at + 16 : at + 20])
            before, after = (int.from_bytes(value[at + start : at + start + 3], "big")
                             for start in (20, 23))
            packed = b"\xff" + value[at + 8 : at + 16] + value[at : at + 8]
            entries[packed] = b"%d:%d:%d" % (seq, seq - before, seq + after)
    return entries


def scan_all(client: redis.Redis, pattern: bytes | str = "*") -> set[bytes]:
    """Every key matching ``pattern``, by SCAN."""
    return set(client.scan_iter(match=pattern, count=1000))


def retrying(attempts: int = 5, deadline: float = 10.0) -> RetryPolicy:
    return RetryPolicy(attempts=attempts, backoff=0.01, max_backoff=0.05, deadline=deadline)
