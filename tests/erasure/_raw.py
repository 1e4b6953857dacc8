"""Everything a backend stores, read behind the store's back as an operator would.

``records(request, url)`` returns one bytes record per stored row (SQLite,
PostgreSQL: every row of every table), per key with its values (Redis: SCAN on
the server, on every Sentinel server, on every Cluster node, replicas too once
they caught up), per item (DynamoDB: a Scan of the table), or per session and
index entry (memory).
"""

from __future__ import annotations

import sqlite3
from typing import Any

import boto3
import psycopg
import pytest
import redis

from chatledger._backends.dynamodb.io import table_name
from chatledger._backends.memory.state import memory_for
from chatledger.testing._redis_server import RedisServer

__all__ = ["records"]


def records(request: pytest.FixtureRequest, url: str) -> list[bytes]:
    scheme = url.partition("://")[0]
    if scheme == "memory":
        return _memory(url.partition("://")[2])
    if scheme == "sqlite":
        return _sqlite(url.partition("://")[2][1:])
    if scheme.startswith("postgres"):
        return _postgres(url)
    if scheme == "dynamodb":
        return _dynamodb(url)
    if scheme == "redis+sentinel":
        group = request.getfixturevalue("sentinel_group")
        return _redis_servers([group.master, *group.replicas_of(group.master)])
    if scheme == "redis+cluster":
        cluster = request.getfixturevalue("redis_cluster")
        return _redis_servers([node for primary in cluster.primaries
                               for node in (primary, *cluster.replicas_of(primary))])
    return _redis_servers([request.getfixturevalue("redis_server")])


def _memory(name: str) -> list[bytes]:
    memory = memory_for(name)
    with memory.lock:
        found = [repr((ns, sid, ledger)).encode()
                 for ns, sessions in memory.namespaces.items()
                 for sid, ledger in sessions.items()]
        found += [repr((ns, user, sorted(ids))).encode()
                  for ns, users in memory.users.items() for user, ids in users.items()]
    return sorted(found)


def _sqlite(path: str) -> list[bytes]:
    db = sqlite3.connect(path)
    try:
        tables = [name for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]
        return sorted(repr((table, row)).encode() for table in tables
                      for row in db.execute(f"SELECT * FROM {table}"))
    finally:
        db.close()


def _postgres(url: str) -> list[bytes]:
    with psycopg.connect(url.partition("?")[0]) as db:
        tables = db.execute("SELECT table_schema, table_name FROM information_schema.tables"
                            " WHERE table_schema = 'chatledger'").fetchall()
        return sorted(_pg_record(table, row) for schema, table in tables
                      for row in db.execute(f'SELECT * FROM "{schema}"."{table}"'))


def _pg_record(table: str, row: tuple[Any, ...]) -> bytes:
    return repr((table, tuple(bytes(v) if isinstance(v, memoryview) else v
                              for v in row))).encode()


def _redis_servers(servers: list[RedisServer]) -> list[bytes]:
    clients = [redis.Redis(host=server.host, port=server.port) for server in servers]
    try:
        for client in clients:
            replication = client.info("replication")
            if replication["role"] == "master":  # its replicas caught up
                client.execute_command("WAIT", replication["connected_slaves"], 2000)
            elif client.info("cluster").get("cluster_enabled"):
                client.execute_command("READONLY")  # a cluster replica answers, not MOVED
        found: list[bytes] = []
        for server, client in zip(servers, clients, strict=True):
            found += [b"%d " % server.port + record for record in _keys(client)]
        return sorted(found)
    finally:
        for client in clients:
            client.close()


def _keys(client: redis.Redis) -> list[bytes]:
    """Every key of one server with its values, raw. Pipelined a page at a time: the
    session's private servers hold every earlier test's keys, and a round trip per
    key and kind made this scan most of the erasure tests' time."""
    out: list[bytes] = []
    cursor = None
    while cursor != 0:
        cursor, keys = client.scan(cursor or 0, count=1000)
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.type(key)
        kinds = pipe.execute()
        for key, kind in zip(keys, kinds, strict=True):
            _read_values(pipe, key, kind)
        out += [b"\x00".join([key, kind, *_values(kind, found)])
                for key, kind, found in zip(keys, kinds, pipe.execute(), strict=True)]
    return out


def _read_values(pipe: Any, key: bytes, kind: bytes) -> None:
    if kind == b"list":
        pipe.lrange(key, 0, -1)
    elif kind == b"hash":
        pipe.hgetall(key)
    elif kind == b"set":
        pipe.smembers(key)
    else:
        pipe.dump(key)


def _values(kind: bytes, found: Any) -> list[bytes]:
    if kind == b"list":
        return list(found)
    if kind == b"hash":
        return [b"%s=%s" % item for item in sorted(found.items())]
    if kind == b"set":
        return sorted(found)
    return [found or b""]


def _dynamodb(url: str) -> list[bytes]:
    """Every item of the table, its attributes' raw bytes."""
    options = dict(part.split("=", 1) for part in url.partition("?")[2].split("&") if part)
    client = boto3.client("dynamodb", region_name=options.get("region"),
                          endpoint_url=options.get("endpoint_url"))
    request: dict[str, Any] = {"TableName": table_name(url), "ConsistentRead": True}
    found: list[bytes] = []
    while True:
        reply = client.scan(**request)
        found += [b"\x00".join(name.encode() + b"=" + _dynamodb_value(value)
                               for name, value in sorted(item.items()))
                  for item in reply.get("Items", [])]
        if "LastEvaluatedKey" not in reply:
            return sorted(found)
        request["ExclusiveStartKey"] = reply["LastEvaluatedKey"]


def _dynamodb_value(value: dict[str, Any]) -> bytes:
    kind, raw = next(iter(value.items()))
    return bytes(raw) if kind == "B" else str(raw).encode()
