"""Which Redis Cluster node owns a session: redis-py's cluster map, asked for lazily.

redis-py's ``RedisCluster`` keeps the map (``CLUSTER SLOTS`` from any node it
can reach, patched by each MOVED); the cluster backend sends its commands
itself, to the owner's address, so that a write and its ``WAIT`` share one
connection on the node that holds the session. The map is asked for on the
first call, not when the store opens, and again after a call failed the way
a failover makes calls fail (a node unreachable, CLUSTERDOWN, TRYAGAIN).

Asking for the map (``CLUSTER SLOTS``, rare) goes through redis-py's own
connections: each read is bounded by the socket timeout, not by the store
call's deadline as the calls themselves are (:mod:`.transport`).

The sync and async clients are built differently (the sync one asks for the
map in its constructor), hence the two small classes; everything else about
the map is shared.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from redis import cluster as sync_cluster
from redis.asyncio import cluster as async_cluster
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.exceptions import MovedError
from redis.retry import Retry as SyncRetry

from .config import ClusterSettings
from .errors import translated

__all__ = ["Address", "AsyncClusterMap", "ClusterMap", "Shard"]

Address = tuple[str, int]


@dataclass(frozen=True)
class Shard:
    """A primary, its replicas and how many slots it serves (for doctor)."""

    primary: Address
    replicas: list[Address]
    slots: int


class _Map:
    """What both maps do without I/O: read redis-py's map."""

    _cluster: Any = None

    def __init__(self, settings: ClusterSettings, where: str) -> None:
        self.settings = settings
        self.where = where
        self._stale = True

    def stale(self) -> None:
        """Ask the cluster again before the next call: it failed as a failover makes calls fail."""
        self._stale = True

    def _owner_of(self, key: bytes) -> Address:
        with translated(self.where):  # no owner (SlotNotCoveredError): unavailable for now
            node = self._cluster.nodes_manager.get_node_from_slot(key_slot(key))
        return node.host, int(node.port)

    def _shards(self) -> list[Shard]:
        slots: dict[str, int] = {}
        members: dict[str, list[Any]] = {}
        for nodes in self._cluster.nodes_manager.slots_cache.values():
            slots[nodes[0].name] = slots.get(nodes[0].name, 0) + 1
            members[nodes[0].name] = nodes
        return [Shard(_address(nodes[0]), [_address(node) for node in nodes[1:]], slots[name])
                for name, nodes in sorted(members.items())]

    def _options(self) -> dict[str, Any]:
        """The cluster client's arguments: no retries of its own, ours are the only layer."""
        connection = self.settings.node.connection
        options = {name: connection[name] for name in _CLIENT_OPTIONS if name in connection}
        if self.settings.node.transport == "tls":
            options.update({name: value for name, value in connection.items()
                            if name.startswith("ssl_")}, ssl=True)
        return {**options, "require_full_coverage": False}


# What every node connection takes, in the form both cluster clients accept.
_CLIENT_OPTIONS = ("username", "password", "socket_timeout", "socket_connect_timeout",
                   "client_name", "decode_responses")


class AsyncClusterMap(_Map):
    """The map behind an async cluster backend."""

    async def owner(self, key: bytes) -> Address:
        """The address of the primary that serves ``key``'s slot."""
        await self._current()
        return self._owner_of(key)

    async def moved(self, exc: MovedError) -> None:
        """A node said the slot is served elsewhere now: believe it."""
        await self._cluster.nodes_manager.move_slot(exc)

    async def shards(self) -> list[Shard]:
        await self._current()
        return self._shards()

    async def close(self) -> None:
        if self._cluster is not None:
            await self._cluster.aclose()

    async def _current(self) -> None:
        if self._cluster is None:
            options = self._options()
            startup = [async_cluster.ClusterNode(*node) for node in self.settings.nodes]
            self._cluster = async_cluster.RedisCluster(
                startup_nodes=startup, retry=AsyncRetry(NoBackoff(), 0), **options)
        if self._stale:
            with translated(self.where):
                await self._cluster.nodes_manager.initialize()
            self._stale = False


class ClusterMap(_Map):
    """The map behind a sync cluster backend."""

    def owner(self, key: bytes) -> Address:
        """The address of the primary that serves ``key``'s slot."""
        self._current()
        return self._owner_of(key)

    def moved(self, exc: MovedError) -> None:
        """A node said the slot is served elsewhere now: believe it."""
        self._cluster.nodes_manager.move_slot(exc)

    def shards(self) -> list[Shard]:
        self._current()
        return self._shards()

    def close(self) -> None:
        if self._cluster is not None:
            self._cluster.close()

    def _current(self) -> None:
        if self._cluster is None:
            options = self._options()
            startup = [sync_cluster.ClusterNode(*node)  # type: ignore[no-untyped-call]
                       for node in self.settings.nodes]
            with translated(self.where):  # this constructor asks for the map
                self._cluster = sync_cluster.RedisCluster(
                    startup_nodes=startup, retry=SyncRetry(NoBackoff(), 0), **options)
            self._stale = False
        elif self._stale:
            with translated(self.where):
                self._cluster.nodes_manager.initialize()
            self._stale = False


def _address(node: Any) -> Address:
    return node.host, int(node.port)
