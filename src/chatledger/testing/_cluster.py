"""A private Redis Cluster for tests: primaries with replicas, on loopback.

Every node is a :class:`~chatledger.testing._redis_server.RedisServer` started
with ``cluster-enabled yes``; ``redis-cli --cluster create`` joins them and
gives each primary its replicas. Failure detection is short, so that killing
a primary promotes its replica in two or three seconds::

    with RedisCluster() as cluster:
        store = open_store(cluster.url)
        old = cluster.owner(cluster.slot_of("some-key"))
        old.kill()
        new = cluster.wait_for_failover(old)

A node listens on its port and on port + 10000 (the cluster bus); each pytest
xdist worker takes its ports from its own stretch (see ``_ports.port_block``).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

from ._ports import PortTaken, port_block
from ._process import StartFailed, find_binary
from ._redis_server import RedisServer
from ._resp import RespReply
from ._waiting import wait_until

__all__ = ["RedisCluster"]

_BLOCK_ATTEMPTS = 5
# The node timeout while the cluster forms. Nodes gossip at a pace set by the
# timeout (a node pings any peer it has not heard from in half of it): with the
# session fixture's 15 s, every node named every replica in CLUSTER SLOTS 17 s
# after the join, with this in about one. A longer timeout is set once it formed.
_FORMING_TIMEOUT_MS = 1000


class RedisCluster:
    """``primaries`` primaries with ``replicas`` replicas each, all private.

    Args:
        node_timeout_ms: ``cluster-node-timeout``: how long a node may be
            silent before it is failed over.
        extra_args: more ``redis-server`` arguments for every node.
        worker: the port stretch to use; by default the xdist worker's number.
    """

    def __init__(self, primaries: int = 3, replicas: int = 1, *, node_timeout_ms: int = 1000,
                 extra_args: Sequence[str] = (), startup_timeout: float = 30.0,
                 worker: int | None = None) -> None:
        self.primary_count = primaries
        self.replica_count = replicas
        self.node_timeout_ms = node_timeout_ms
        self.extra_args = tuple(extra_args)
        self.startup_timeout = startup_timeout
        self.worker = _xdist_worker() if worker is None else worker
        self.nodes: list[RedisServer] = []

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> RedisCluster:
        """Start the nodes on a free port block, join them, wait until all is in sync."""
        size = self.primary_count * (1 + self.replica_count)
        for skip in range(_BLOCK_ATTEMPTS):
            ports = port_block(size, RedisServer.host, self.worker, skip)
            try:
                self.nodes = [RedisServer(port, extra_args=self._node_args()).start()
                              for port in ports]
                break
            except (StartFailed, PortTaken):  # another process took a port after the probe
                self.stop()
        else:
            raise RuntimeError(f"no port block for a {size}-node cluster could be bound")
        try:
            self._create()
            self.wait_until_healthy()
            self._settle_node_timeout()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        self.nodes = []

    def __enter__(self) -> RedisCluster:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- topology ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``redis+cluster://`` naming every node."""
        return "redis+cluster://" + ",".join(f"{n.host}:{n.port}" for n in self.nodes)

    @property
    def primaries(self) -> list[RedisServer]:
        """The running nodes that say they are primaries."""
        return [node for node in self._running() if _role(node) == "master"]

    def replicas_of(self, primary: RedisServer) -> list[RedisServer]:
        """The running nodes that replicate ``primary``."""
        mark = f"master_port:{primary.port}\r\n".encode()
        return [node for node in self._running()
                if _role(node) == "slave" and mark in node.info("replication")]

    def slot_of(self, key: str | bytes) -> int:
        """The hash slot of ``key`` (its hash tag, if it has one)."""
        return int(_integer(self._running()[0].command("CLUSTER", "KEYSLOT", key)))

    def owner(self, slot: int) -> RedisServer:
        """The node that a running node's ``CLUSTER SLOTS`` names for ``slot``."""
        for start, end, primary, *_ in _slot_ranges(self._running()[0]):
            if start <= slot <= end:
                port = int(primary[1])
                return next(node for node in self.nodes if node.port == port)
        raise RuntimeError(f"no node owns slot {slot}")

    # -- faults --------------------------------------------------------------------------

    def stall_replication(self, primary: RedisServer) -> list[RedisServer]:
        """Freeze ``primary``'s replicas and cut their links: its writes stop replicating.

        Returns the paused replicas; ``resume()`` each to let them catch up (or,
        once the primary is killed, fail over without what they missed).
        """
        replicas = self.replicas_of(primary)
        for replica in replicas:
            replica.pause()
        primary.command("CLIENT", "KILL", "TYPE", "replica")
        return replicas

    def wait_for_failover(self, old: RedisServer, timeout: float = 30.0) -> RedisServer:
        """Wait until another node owns ``old``'s slots and the cluster is ok again."""
        slot = self._first_slot_of(old)
        promoted: list[RedisServer] = []

        def failed_over() -> bool:
            owner = self.owner(slot)
            if owner is old or not owner.running or _role(owner) != "master":
                return False
            promoted[:] = [owner]
            return all(_cluster_ok(node) for node in self._running() if node is not old)

        self._wait(failed_over, "a failover", timeout)
        return promoted[0]

    def wait_until_healthy(self, timeout: float | None = None) -> None:
        """Wait for ``cluster_state:ok`` on every running node, every replica's link up
        and every node naming every replica in ``CLUSTER SLOTS``."""
        def healthy() -> bool:
            running = self._running()
            linked = all(b"master_link_status:up" in node.info("replication")
                         for node in running if _role(node) == "slave")
            known = all(len(entry) - 3 == self.replica_count
                        for node in running for entry in _slot_ranges(node))
            return linked and known and all(_cluster_ok(node) for node in running)

        self._wait(healthy, "cluster_state:ok and replicas in sync", timeout)

    # -- internals -----------------------------------------------------------------------

    def _node_args(self) -> list[str]:
        return [
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",
            "--cluster-node-timeout", str(min(self.node_timeout_ms, _FORMING_TIMEOUT_MS)),
            # A replica may fail over however long its link was down: tests stall it.
            "--cluster-replica-validity-factor", "0",
            # Replicas sync at once, not after the 5 s default delay.
            "--repl-diskless-sync-delay", "0",
            # CLUSTER SLOTS names a replica once its offset is above 0, and an idle
            # primary moves the offset only by pinging its replicas: every 10 s by default.
            "--repl-ping-replica-period", "1",
            *self.extra_args,
        ]

    def _settle_node_timeout(self) -> None:
        """Give every node the asked-for timeout, now that the cluster has formed."""
        if self.node_timeout_ms > _FORMING_TIMEOUT_MS:
            for node in self.nodes:
                node.command("CONFIG", "SET", "cluster-node-timeout", str(self.node_timeout_ms))

    def _create(self) -> None:
        addresses = [f"{node.host}:{node.port}" for node in self.nodes]
        command = [find_binary("redis-cli"), "--cluster", "create", *addresses,
                   "--cluster-replicas", str(self.replica_count), "--cluster-yes"]
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=self.startup_timeout, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed:\n{result.stdout}"
                               f"\n{result.stderr}")

    def _first_slot_of(self, primary: RedisServer) -> int:
        for start, _, owner, *_ in _slot_ranges(self._running_other_than(primary)):
            if int(owner[1]) == primary.port:
                return int(start)
        raise RuntimeError(f"{primary!r} owns no slot")

    def _running(self) -> list[RedisServer]:
        return [node for node in self.nodes if node.running]

    def _running_other_than(self, node: RedisServer) -> RedisServer:
        return next(other for other in self._running() if other is not node)

    def _wait(self, condition: Callable[[], bool], what: str, timeout: float | None) -> None:
        wait_until(condition, what, timeout or self.startup_timeout, who="the cluster",
                   tolerated=(StopIteration,))  # no node of a role yet


def _slot_ranges(node: RedisServer) -> list[list[Any]]:
    reply = node.command("CLUSTER", "SLOTS")
    assert isinstance(reply, list)
    return [entry for entry in reply if isinstance(entry, list)]


def _cluster_ok(node: RedisServer) -> bool:
    return b"cluster_state:ok" in _bytes(node.command("CLUSTER", "INFO"))


def _role(node: RedisServer) -> str:
    for line in node.info("replication").splitlines():
        if line.startswith(b"role:"):
            return line[5:].decode()
    return "?"


def _integer(reply: RespReply) -> int:
    assert isinstance(reply, int)
    return reply


def _bytes(reply: RespReply) -> bytes:
    return reply if isinstance(reply, bytes) else str(reply).encode()


def _xdist_worker() -> int:
    """This pytest-xdist worker's number (``gw3`` -> 3); 0 outside xdist."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(name[2:]) if name[2:].isdigit() else 0
