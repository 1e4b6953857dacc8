"""What a backend holds for a namespace, read as an operator would: behind the store.

Every key of the namespace on Redis (standalone, Sentinel's master, each
Cluster primary), every row of the namespace in SQLite and PostgreSQL, every
ledger of a memory:// store. Opens its own sync store on the URL (an async
case's storage is the same), so it works for every case of tests/backends.py.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from chatledger import open_store
from chatledger._backends.dynamodb.layout import part_key, partition, seq_of
from chatledger._backends.memory.state import memory_for
from chatledger._backends.redis.keys import meta_pattern
from chatledger._url import parse_url


@dataclass(frozen=True)
class AtRest:
    """The entries' bytes as stored, and everything stored for the namespace."""

    entries: list[bytes]
    everything: bytes


def at_rest(url: str, namespace: str) -> AtRest:
    scheme = url.partition(":")[0]
    if scheme == "memory":
        return _memory(url, namespace)
    if scheme == "sqlite":
        return _sqlite(parse_url(url).path, namespace)
    with open_store(url, namespace=namespace) as store:
        if scheme.startswith("postgres"):
            return _postgres(store._backend, namespace)
        if scheme == "dynamodb":
            return _dynamodb(store._backend, namespace)
        return _redis(store._backend, namespace)


def _memory(url: str, namespace: str) -> AtRest:
    parsed = parse_url(url)
    name = (parsed.hosts[0][0] if parsed.hosts else "") + parsed.path
    ledgers = memory_for(name).namespaces.get(namespace, {})
    entries = [bytes(blob) for ledger in ledgers.values() for blob in ledger.entries]
    return AtRest(entries, b"\n".join(entries))


def _sqlite(path: str, namespace: str) -> AtRest:
    db = sqlite3.connect(path)
    try:
        entries = [bytes(body) for (body,) in db.execute(
            "SELECT body FROM entries WHERE ns = ? ORDER BY sid, seq", (namespace,))]
        rows = [repr(row).encode() for table in ("sessions", "message_ids")
                for row in db.execute(f"SELECT * FROM {table} WHERE ns = ?", (namespace,))]
    finally:
        db.close()
    return AtRest(entries, b"\n".join(entries + rows))


def _postgres(backend: Any, namespace: str) -> AtRest:
    with backend._transaction(write=False) as tx:
        schema = backend.sql.schema
        entries = [bytes(body) for (body,) in tx.connection.execute(
            f"SELECT body FROM {schema}.entries WHERE ns = %s ORDER BY sid, seq", (namespace,),
            binary=True).fetchall()]
        rows = [repr(row).encode() for table in ("sessions", "message_ids")
                for row in tx.connection.execute(
                    f"SELECT * FROM {schema}.{table} WHERE ns = %s", (namespace,)).fetchall()]
    return AtRest(entries, b"\n".join(entries + rows))


def _redis(backend: Any, namespace: str) -> AtRest:
    if hasattr(backend, "map"):  # a cluster: every primary
        clients = [backend._node(shard.primary).client for shard in backend.map.shards()]
    else:
        clients = [backend.client]
    entries: list[bytes] = []
    everything: list[bytes] = []
    for client in clients:
        # In key order: SCAN's own order changes while the server resizes its table.
        for key in sorted(set(client.scan_iter(match=meta_pattern(namespace, "", every_key=True),
                                               count=1000))):
            kind = client.type(key)
            everything.append(key)
            if kind == b"list":
                entries += client.lrange(key, 0, -1)
            elif kind == b"hash":
                everything += [part for pair in client.hgetall(key).items() for part in pair]
            else:
                raise AssertionError(f"a key of type {kind!r}: read it here too")
    return AtRest(entries, b"\n".join(entries + everything))


def _dynamodb(backend: Any, namespace: str) -> AtRest:
    """A Scan of the whole table (a test's own), the namespace's partitions kept."""
    items: list[dict[str, Any]] = []
    request: dict[str, Any] = {"TableName": backend.table, "ConsistentRead": True}
    while True:
        reply = backend.io.client().scan(**request)
        items += reply.get("Items", [])
        if "LastEvaluatedKey" not in reply:
            break
        request["ExclusiveStartKey"] = reply["LastEvaluatedKey"]
    mine = sorted((item for item in items
                   if item["pk"]["S"].startswith(partition(namespace, ""))),
                  key=lambda item: (item["pk"]["S"], item["sk"]["S"]))
    by_key = {(item["pk"]["S"], item["sk"]["S"]): item for item in mine}
    entries = []
    for item in mine:
        if item["sk"]["S"].startswith("e"):
            blob = bytes(item["b"]["B"])
            for k in range(1, int(item.get("parts", {"N": "0"})["N"]) + 1):
                key = part_key(item["tok"]["S"], seq_of(item["sk"]["S"]), k)
                blob += bytes(by_key[(item["pk"]["S"], key)]["b"]["B"])
            entries.append(blob)
    everything = [repr(sorted(item.items())).encode() for item in mine]
    return AtRest(entries, b"\n".join(entries + everything))
