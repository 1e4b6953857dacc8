"""A private Redis Sentinel group for tests: a master, replicas and sentinels.

Everything runs as ``redis-server`` processes on 127.0.0.1 (see
:class:`~chatledger.testing.redis_server.RedisServer`), with short failure
detection so that a failover takes about a second::

    with SentinelGroup() as group:
        store = open_store(group.url)
        ...
        group.master.kill()
        group.wait_for_failover()
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from .redis_server import RedisCommandError, RedisServer

__all__ = ["SentinelGroup", "SentinelServer"]

SERVICE = "mymaster"


class SentinelServer(RedisServer):
    """``redis-server --sentinel`` watching one master; its config is written on start."""

    def __init__(self, master: RedisServer, *, service: str = SERVICE, quorum: int = 2,
                 down_after_ms: int = 400, failover_timeout_ms: int = 2000,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.master_address = (master.host, master.port)
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

    def master(self) -> tuple[str, int]:
        """Where this sentinel says the master is."""
        reply = self.command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.service)
        if not isinstance(reply, list) or len(reply) != 2:
            raise RuntimeError(f"sentinel on {self.port} knows no master: {reply!r}")
        host, port = reply
        return _text(host), int(_text(port))


class SentinelGroup:
    """A master, ``replicas`` replicas and ``sentinels`` sentinels, all private."""

    def __init__(self, *, replicas: int = 1, sentinels: int = 3, service: str = SERVICE,
                 startup_timeout: float = 15.0) -> None:
        self.service = service
        self.startup_timeout = startup_timeout
        # No diskless-sync delay: a replica's first sync starts at once.
        fast_sync = ["--repl-diskless-sync-delay", "0"]
        self.servers = [RedisServer(extra_args=fast_sync)]
        self._replica_count = replicas
        self._sentinel_count = sentinels
        self.sentinels: list[SentinelServer] = []

    def start(self) -> SentinelGroup:
        first = self.servers[0].start()
        for _ in range(self._replica_count):
            replica = RedisServer(extra_args=[*first.extra_args, "--replicaof", first.host,
                                              str(first.port)])
            self.servers.append(replica.start())
        self._wait(lambda: _online_replicas(first) == self._replica_count, "replicas to sync")
        for _ in range(self._sentinel_count):
            sentinel = SentinelServer(first, service=self.service)
            self.sentinels.append(sentinel.start())
        self._wait(self._sentinels_agree, "sentinels to find each other and the replicas")
        return self

    def stop(self) -> None:
        for server in [*self.sentinels, *self.servers]:
            server.stop()

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
        host, port = self._live_sentinel().master()
        return next(s for s in self.servers if (s.host, s.port) == (host, port))

    def wait_for_failover(self, old: RedisServer, timeout: float = 30.0) -> RedisServer:
        """Wait until every sentinel names a new master that says it is one."""
        def promoted() -> bool:
            addresses = {sentinel.master() for sentinel in self.sentinels if sentinel.running}
            if len(addresses) != 1 or addresses == {(old.host, old.port)}:
                return False
            return b"role:master" in self.master.info("replication")

        self._wait(promoted, "a failover", timeout)
        return self.master

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

    def _wait(self, condition: Callable[[], bool], what: str,
              timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout or self.startup_timeout)
        while time.monotonic() < deadline:
            try:
                if condition():
                    return
            except (OSError, RedisCommandError, RuntimeError):
                pass  # a server restarting or not yet elected: ask again
            time.sleep(0.05)
        raise RuntimeError(f"the Sentinel group waited in vain for {what}")


def _online_replicas(server: RedisServer) -> int:
    return server.info("replication").count(b"state=online")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


