# Generated from src/chatledger/_backends/redis/_async/cluster.py by scripts/unasync.py: edit that file, not this one.
"""``redis+cluster://``: Redis Cluster, each session on the node that owns its slot.

The same scripts and calls as :mod:`.client`: a session's three keys share one
hash tag, so each operation is one script on one node. Where that node is
comes from redis-py's cluster map (:mod:`..topology`); the call itself goes
to a connection pool of that node's own, so that with ``wait_replicas`` the
write and its ``WAIT`` (``WAITAOF`` where the node has it) share a connection
on the node that holds the session. redis-py's cluster client would send
``WAIT`` to another node, whose count says nothing about this write.

Redirects: MOVED (the slot has a new owner, after a failover or a reshard)
updates the map and the call goes there at once. While a slot migrates, Redis
answers a script on several keys with TRYAGAIN (or ASK): like a node
unreachable or CLUSTERDOWN, that is BackendUnavailable, retried by the store
(with the same ids) until the move is done, and the map is asked for again
before the next attempt. ``sessions()`` and
``purge()`` SCAN every primary.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, ClassVar, TypeVar, cast

import redis as driver
from redis.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import AskError, MovedError, RedisError

from ...._checks import Check
from ...._errors import BackendError, BackendUnavailable
from ...._options import StoreOptions
from ...._url import StoreURL
from ..._sync.base import Backend
from ...contract import SessionPage
from ...registry import builtin_schemes
from ..calls import SCAN_COUNT, Calls, ScriptCall
from ..config import cluster_settings
from ..errors import translated
from ..health import cluster_checks
from ..topology import Address, ClusterMap
from ..transport import CONNECTIONS, POOL
from .client import Node, RedisBackend
from .operations import ScriptOperations

__all__ = ["ClusterBackend"]

T = TypeVar("T")

REDIRECTS = 5  # MOVED or ASK replies one call follows before it reports the cluster unsettled


class ClusterBackend(ScriptOperations, Backend):
    """The Redis backend on a cluster: one node (client and pool) per primary, found by slot."""

    schemes: ClassVar[tuple[str, ...]] = builtin_schemes(__name__)
    max_entry_bytes: ClassVar[int | None] = RedisBackend.max_entry_bytes

    def __init__(self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]) -> None:
        super().__init__(url, options, extra)
        self.settings = cluster_settings(url, options, extra)
        self.calls = Calls(options, self.settings.node.replication)
        self._where = url.redacted()
        self._closed = False
        self.map = ClusterMap(self.settings, self._where)
        self._nodes: dict[Address, Node] = {}

    supports_users = True

    def list_sessions(self, prefix: str, cursor: str | None) -> SessionPage:
        """A page from one primary at a time; the cursor says which, and where in it."""
        self._before_call()
        shard, position = _split_cursor(cursor)
        primaries = [found.primary for found in self.map.shards()]
        if shard >= len(primaries):
            return SessionPage([], None)
        scan = self.calls.scan(prefix, str(position))
        while not scan.done:
            scan.feed(*self._scan_node(primaries[shard], scan.cursor, scan.pattern))
        page = scan.page()
        if page.cursor is not None:
            return SessionPage(page.ids, f"{shard}:{page.cursor}")
        last = shard + 1 == len(primaries)
        return SessionPage(page.ids, None if last else f"{shard + 1}:0")

    def _run_reads(self, calls: list[ScriptCall[T]]) -> list[T]:
        """Calls that write nothing, each on its slot's primary: one pipeline per node.

        A call answered with an error (MOVED after a reshard, ASK, TRYAGAIN) is
        sent again on its own, which follows redirects and reports the rest.
        """
        self._before_call()
        by_node: dict[Address, list[int]] = {}
        for index, call in enumerate(calls):
            by_node.setdefault(self.map.owner(call.keys[0]), []).append(index)
        results: list[Any] = [None] * len(calls)
        for address, indexes in by_node.items():
            with self._at(address):
                replies = self._node(address).send_all([calls[i] for i in indexes])
            for index, reply in zip(indexes, replies, strict=True):
                failed = isinstance(reply, Exception)
                results[index] = self._run(calls[index]) if failed else reply
        return results

    def purge(self, prefix: str) -> int:
        self._before_call()
        deleted = 0
        for shard in self.map.shards():
            scan = self.calls.purge_scan(prefix)
            while not scan.done:
                found = scan.feed(*self._scan_node(shard.primary, scan.cursor, scan.pattern))
                for session in found:
                    deleted += self._run(self.calls.delete(session))
        return deleted

    def close(self) -> None:
        self._closed = True
        for node in self._nodes.values():
            node.close()
        self.map.close()

    def checks(self) -> list[Check]:
        """The topology, then the server checks of every primary."""
        try:
            shards = self.map.shards()
            first: Any = self._node(shards[0].primary).client  # Any: the sync one is untyped
            state = first.execute_command("CLUSTER INFO")
            found = cluster_checks(shards, state, self.calls.replication.replicas)
            for shard in shards:
                host, port = shard.primary
                found += [replace(check, name=f"{check.name} {host}:{port}")
                          for check in self._node(shard.primary).server_checks()]
        except (RedisError, BackendError) as exc:
            return [Check("cluster", "fail", f"{type(exc).__name__}: {exc}")]
        return found

    def corrupt_entry(self, session: str, seq: int, blob: bytes) -> None:
        node = self._node(self.map.owner(self.calls.keys(session).meta))
        node.corrupt_entry(session, seq, blob)

    def _run(self, call: ScriptCall[T]) -> T:
        """The call on the primary of its slot, following MOVED."""
        self._before_call()
        for _ in range(REDIRECTS):
            address = self.map.owner(call.keys[0])
            with self._at(address):
                try:
                    reply = self._node(address).send(call)
                except MovedError as exc:
                    self.map.moved(exc)
                    continue
                except AskError as exc:  # the slot is moving: the store retries after
                    raise BackendUnavailable(f"redis {self._where}: slot {exc.slot_id} is "
                                             "migrating (ASK)") from exc
            return reply.result()
        self.map.stale()
        raise BackendUnavailable(f"redis {self._where}: redirected {REDIRECTS} times without "
                                 "reaching the slot's owner (the cluster is resharding)")

    def _scan_node(self, address: Address, cursor: int,
                         pattern: bytes) -> tuple[int, list[bytes]]:
        self._before_call()
        with self._at(address):
            next_cursor, keys = self._node(address).client.scan(
                cursor, match=pattern, count=SCAN_COUNT)
        return int(next_cursor), cast(list[bytes], keys)

    def _node(self, address: Address) -> Node:
        """The node's own client and pool, made on first use."""
        node = self._nodes.get(address)
        if node is None:
            settings = self.settings.node
            host, port = address
            pool = POOL(
                max_connections=settings.max_connections, timeout=settings.pool_timeout,
                connection_class=CONNECTIONS[settings.transport],
                retry=Retry(NoBackoff(), 0), host=host, port=port, **settings.connection)
            where = f"{self._where} (node {host}:{port})"
            node = self._nodes[address] = Node(driver.Redis(connection_pool=pool),
                                                    self.calls, where)
        return node

    def _before_call(self) -> None:
        if self._closed:
            raise BackendError(f"the store {self._where} is closed")

    @contextmanager
    def _at(self, address: Address) -> Iterator[None]:
        """Driver errors as chatledger's; a call that may have met a failover renews the map."""
        host, port = address
        try:
            with translated(f"{self._where} (node {host}:{port})"):
                yield
        except BackendUnavailable:
            self.map.stale()
            raise


def _split_cursor(cursor: str | None) -> tuple[int, int]:
    """``"shard:scan-cursor"`` as numbers; None is the start."""
    if cursor is None:
        return 0, 0
    shard, _, position = cursor.partition(":")
    if not (shard.isdigit() and position.isdigit()):
        raise BackendError(f"{cursor!r} is not a Redis Cluster session cursor")
    return int(shard), int(position)

