"""A private Redis Sentinel group for tests: a master, replicas and sentinels.

Everything runs as ``redis-server`` processes on 127.0.0.1 (see
:class:`~chatledger.testing._redis_server.RedisServer`), with short failure
detection so that a failover takes about a second::

    with SentinelGroup() as group:
        store = open_store(group.url)
        ...
        group.master.kill()
        group.wait_for_failover()

With ``proxied=True`` the master is reached only through a
:class:`~chatledger.testing._proxy.FaultProxy`: the replicas replicate from the
proxy's address and the sentinels monitor it, so cutting the proxy cuts the
master off from everyone (the sentinels would otherwise rewrite a replica that
bypasses the proxy back to the master's own address)::

    with SentinelGroup(proxied=True) as group:
        old = group.master
        paused = group.stall_replication()  # writes from now on reach no replica
        group.cut_off_master()
        ...
        group.wait_for_failover(old)
        group.rejoin(old)                   # back empty, as the new master's replica
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from ._proxy import FaultProxy
from ._redis_server import RedisServer
from ._waiting import wait_until

__all__ = ["SentinelGroup", "SentinelServer"]

SERVICE = "mymaster"
Address = tuple[str, int]


class SentinelServer(RedisServer):
    """``redis-server --sentinel`` watching one master; its config is written on start.

    ``master`` is the server to watch, or the address to watch it at (a proxy's).
    """

    def __init__(self, master: RedisServer | Address, *, service: str = SERVICE,
                 quorum: int = 2, down_after_ms: int = 400, failover_timeout_ms: int = 2000,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.master_address = master if isinstance(master, tuple) else (master.host, master.port)
        self.service = service
        self.quorum = quorum
        self.down_after_ms = down_after_ms
        self.failover_timeout_ms = failover_timeout_ms

    def _arguments(self, binary: str, port: int, directory: Path) -> list[str]:
        # Sentinel insists on a config file it can rewrite; a new one per start.
        config = directory / "sentinel.conf"
        host, master_port = self.master_address
        config.write_text("\n".join([
            f"port {port}", f"bind {self.host}", f"dir {directory}",
            f"sentinel monitor {self.service} {host} {master_port} {self.quorum}",
            f"sentinel down-after-milliseconds {self.service} {self.down_after_ms}",
            f"sentinel failover-timeout {self.service} {self.failover_timeout_ms}",
            f"sentinel parallel-syncs {self.service} 1",
        ]) + "\n")
        return [binary, str(config), "--sentinel", *self.extra_args]

    def master(self) -> Address:
        """Where this sentinel says the master is."""
        reply = self.command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.service)
        if not isinstance(reply, list) or len(reply) != 2:
            raise RuntimeError(f"sentinel on {self.port} knows no master: {reply!r}")
        host, port = reply
        return _text(host), int(_text(port))


class SentinelGroup:
    """A master, ``replicas`` replicas and ``sentinels`` sentinels, all private.

    ``proxied``: the first master sits behind :attr:`proxy`, and everyone
    (replicas, sentinels, and so clients) reaches it through that.
    ``down_after_ms``: how long the master may be silent before the sentinels
    fail it over (short by default, for failover tests).
    """

    def __init__(self, *, replicas: int = 1, sentinels: int = 3, service: str = SERVICE,
                 proxied: bool = False, startup_timeout: float = 15.0,
                 down_after_ms: int = 400) -> None:
        self.service = service
        self.down_after_ms = down_after_ms
        self.startup_timeout = startup_timeout
        # No diskless-sync delay: a replica's first sync starts at once.
        fast_sync = ["--repl-diskless-sync-delay", "0"]
        self.servers = [RedisServer(extra_args=fast_sync)]
        self._replica_count = replicas
        self._sentinel_count = sentinels
        self._proxied = proxied
        self.proxy: FaultProxy | None = None
        self.sentinels: list[SentinelServer] = []

    def start(self) -> SentinelGroup:
        first = self.servers[0].start()
        if self._proxied:
            self.proxy = FaultProxy(first.host, first.port).start()
        host, port = self.address_of(first)
        for _ in range(self._replica_count):
            replica = RedisServer(extra_args=[*first.extra_args, "--replicaof", host, str(port)])
            self.servers.append(replica.start())
        self.wait_for_replicas(first)
        for _ in range(self._sentinel_count):
            self.sentinels.append(SentinelServer((host, port), service=self.service,
                                                 down_after_ms=self.down_after_ms).start())
        self._wait(self._sentinels_agree, "sentinels to find each other and the replicas")
        return self

    def stop(self) -> None:
        for server in [*self.sentinels, *self.servers]:
            server.stop()
        if self.proxy is not None:
            self.proxy.stop()

    def __enter__(self) -> SentinelGroup:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """``redis+sentinel://`` naming every sentinel and the service."""
        hosts = ",".join(f"{s.host}:{s.port}" for s in self.sentinels)
        return f"redis+sentinel://{hosts}/{self.service}"

    @property
    def master(self) -> RedisServer:
        """The server the sentinels currently name as master."""
        address = self._live_sentinel().master()
        return next(s for s in self.servers if self.address_of(s) == address)

    def address_of(self, server: RedisServer) -> Address:
        """Where the group reaches ``server``: the proxy's address for the proxied one."""
        if self.proxy is not None and server is self.servers[0]:
            return self.proxy.host, self.proxy.port
        return server.host, server.port

    def replicas_of(self, master: RedisServer) -> list[RedisServer]:
        """The running servers that replicate from ``master`` (at its group address)."""
        mark = f"master_port:{self.address_of(master)[1]}\r\n".encode()
        return [server for server in self.servers
                if server.running and mark in server.info("replication")]

    # -- faults --------------------------------------------------------------------------

    def stall_replication(self) -> list[RedisServer]:
        """Freeze the master's replicas and cut their links: its writes stop replicating.

        The window a partition opens when writers still reach a master its
        replicas do not. Returns the paused replicas: ``resume()`` them before
        the sentinels pick one to promote (they pass over one that stays silent
        past ``down-after-milliseconds``).
        """
        master = self.master
        replicas = self.replicas_of(master)
        for replica in replicas:
            replica.pause()
        master.command("CLIENT", "KILL", "TYPE", "replica")
        return replicas

    def cut_off_master(self) -> None:
        """Refuse and reset every connection through the proxy: the master is unreachable
        for sentinels, replicas and clients alike, yet still running."""
        self._proxy().refuse()

    def rejoin(self, old: RedisServer) -> None:
        """Bring a failed-over master back, empty, as a replica of the new master
        (behind a healed proxy); wait until its link is up.

        It restarts as a replica at once: the sentinels would convert a returning
        master too, but only after it has looked sane for 8 s.
        """
        host, port = self.address_of(self.master)
        old.extra_args = (*_without_replicaof(old.extra_args), "--replicaof", host, str(port))
        old.restart(empty=True)
        if old is self.servers[0] and self.proxy is not None:
            self.proxy.clear()
        self._wait(lambda: b"master_link_status:up" in old.info("replication"),
                   f"{old!r} to replicate the new master")

    # -- waiting -------------------------------------------------------------------------

    def wait_for_failover(self, old: RedisServer, timeout: float = 30.0) -> RedisServer:
        """Wait until every sentinel names a new master that says it is one."""
        old_address = self.address_of(old)

        def promoted() -> bool:
            addresses = {sentinel.master() for sentinel in self.sentinels if sentinel.running}
            if len(addresses) != 1 or addresses == {old_address}:
                return False
            return b"role:master" in self.master.info("replication")

        self._wait(promoted, "a failover", timeout)
        return self.master

    def wait_for_replicas(self, master: RedisServer) -> None:
        """Wait until every replica of ``master`` has its link up and the master sees
        each one online: before a fault, so that any replica can be promoted."""
        def synced() -> bool:
            replicas = self.replicas_of(master)
            return (len(replicas) == self._replica_count
                    and _online_replicas(master) == self._replica_count
                    and all(b"master_link_status:up" in replica.info("replication")
                            for replica in replicas))

        self._wait(synced, "replicas to sync")

    def _sentinels_agree(self) -> bool:
        others = self._sentinel_count - 1
        for sentinel in self.sentinels:
            known = sentinel.command("SENTINEL", "SENTINELS", self.service)
            replicas = sentinel.command("SENTINEL", "REPLICAS", self.service)
            if not isinstance(known, list) or len(known) < others:
                return False
            if not isinstance(replicas, list) or len(replicas) < self._replica_count:
                return False
        return True

    def _live_sentinel(self) -> SentinelServer:
        return next(s for s in self.sentinels if s.running)

    def _proxy(self) -> FaultProxy:
        if self.proxy is None:
            raise RuntimeError("this SentinelGroup has no proxy: make it with proxied=True")
        return self.proxy

    def _wait(self, condition: Callable[[], bool], what: str,
              timeout: float | None = None) -> None:
        wait_until(condition, what, timeout or self.startup_timeout, who="the Sentinel group")


def _without_replicaof(arguments: tuple[str, ...]) -> tuple[str, ...]:
    if "--replicaof" not in arguments:
        return arguments
    at = arguments.index("--replicaof")
    return arguments[:at] + arguments[at + 3:]


def _online_replicas(server: RedisServer) -> int:
    return server.info("replication").count(b"state=online")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
