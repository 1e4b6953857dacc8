"""A real TCP proxy that injects network faults between a client and its server.

`FaultProxy` listens on loopback and forwards every accepted connection to an
upstream address, byte for byte, in background threads. While traffic flows,
tests switch faults on and off to reproduce what real networks do to a client:
connections closed or reset under it, replies that never arrive, replies cut in
half or dripping in a byte at a time, latency, and servers that stop answering::

    with RedisServer() as server, FaultProxy(server.host, server.port) as proxy:
        client = redis.Redis.from_url(f"redis://{proxy.url_netloc}/0")
        proxy.lose_next_reply()    # the next command is applied, its reply is lost
        ...
        proxy.clear()              # back to a healthy network

Only the standard library is used. Sockets are non-blocking and every wait is a
short poll, so `stop()` finishes in bounded time whatever state the faults left
the connections in. The threads live in `_relay`, each direction's forwarding in
`_pump`, the switches and counters in `_faults`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType
from typing import TypeVar

from ._faults import Faults
from ._relay import Relay

__all__ = ["FaultProxy"]

_ProxyT = TypeVar("_ProxyT", bound="FaultProxy")


class FaultProxy:
    """TCP proxy from a loopback port to `upstream_host:upstream_port`, with switchable faults.

    Every fault can be switched while traffic flows, from any thread. Persistent faults
    (`blackhole`, `latency`, `drip`, `refuse`, `reset_randomly`) and armed one-shot faults
    (`cut_reply`, `lose_next_reply`) are all switched off by `clear()`; `close_all()` and
    `reset_all()` act once, immediately.

    Counters for assertions: `connections_accepted`, `bytes_up` (client to server),
    `bytes_down` (server to client) and `faults_injected`, which counts each time a
    fault hit traffic: a connection closed, reset or refused, a reply cut or lost.
    Latency, dripping and blackholing only shape traffic and are not counted.
    """

    def __init__(
        self,
        upstream_host: str,
        upstream_port: int,
        listen_host: str = "127.0.0.1",
        listen_port: int = 0,
        *,
        connect_timeout: float = 2.0,
    ) -> None:
        self.upstream_host = upstream_host
        self.upstream_port = upstream_port
        self._listen_address = (listen_host, listen_port)
        self._faults = Faults()
        self._relay = Relay((upstream_host, upstream_port), self._faults, connect_timeout)
        self._lock = threading.Lock()
        self._started = False
        self._port: int | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self: _ProxyT) -> _ProxyT:
        """Bind the listening socket and start accepting connections. Returns self."""
        with self._lock:
            if self._started:
                raise RuntimeError("FaultProxy was already started; create a new one")
            self._started = True
        self._port = self._relay.start(self._listen_address)
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Close the listener and every connection, then join all threads (within `timeout`)."""
        self._relay.stop(timeout)

    def __enter__(self: _ProxyT) -> _ProxyT:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    # -- addresses and counters --------------------------------------------------------

    @property
    def host(self) -> str:
        """The host clients connect to."""
        return self._listen_address[0]

    @property
    def port(self) -> int:
        """The port clients connect to (known once started)."""
        if self._port is None:
            raise RuntimeError("FaultProxy is not started")
        return self._port

    @property
    def url_netloc(self) -> str:
        """`host:port` for building client URLs, e.g. ``f"redis://{proxy.url_netloc}/0"``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def connections_accepted(self) -> int:
        """Client connections accepted so far, refused ones included."""
        return self._faults.connections_accepted

    @property
    def bytes_up(self) -> int:
        """Bytes forwarded from clients to the upstream server."""
        return self._faults.bytes_up

    @property
    def bytes_down(self) -> int:
        """Bytes forwarded from the upstream server to clients."""
        return self._faults.bytes_down

    @property
    def faults_injected(self) -> int:
        """Connections closed, reset or refused and replies cut or lost by a fault."""
        return self._faults.faults_injected

    @property
    def active_connections(self) -> int:
        """Connections currently open through the proxy."""
        return len(self._relay.open_links())

    # -- faults --------------------------------------------------------------------------

    def close_all(self) -> int:
        """Close every current connection gracefully (FIN); returns how many were closed."""
        return self._relay.kill_links(reset=False)

    def reset_all(self) -> int:
        """Abort every current connection with RST; returns how many were reset."""
        return self._relay.kill_links(reset=True)

    def blackhole(self, on: bool = True) -> None:
        """Hold all traffic in both directions while keeping connections open.

        New connections are still accepted. Held bytes stay unread, so a client hangs
        until its own timeout; connections still open after `clear()` get them late.
        """
        self._faults.blackholed = on

    def latency(self, seconds: float) -> None:
        """Delay every forwarded chunk, in both directions, by at least `seconds`."""
        self._faults.set_latency(seconds)

    def drip(self, byte_every: float | None = 0.25) -> None:
        """Forward replies (server to client) one byte at a time, `byte_every` s before each.

        A client whose timeout is per read never times out, however long the whole
        reply takes: each read gets a byte. Requests still flow at full speed. Open
        connections drip too, from the next chunk they forward; ``drip(None)`` or
        `clear()` lets the rest flow whole again, even in the middle of a reply.
        """
        self._faults.set_drip(byte_every)

    def cut_reply(self, after_bytes: int | None = None) -> None:
        """Cut the next server-to-client chunk short, then close that connection (one-shot).

        Forwards `after_bytes` bytes of the chunk, or half of it by default, but always
        at least one byte less than the whole chunk, so the reply really is incomplete.
        """
        self._faults.arm_cut(after_bytes)

    def lose_next_reply(self, then: Callable[[], None] | None = None) -> None:
        """Let the next request reach the server, drop its reply and reset (one-shot).

        The server applies the command but the client never learns whether it was.
        ``then``, if given, runs once the reply is dropped and before the client's
        connection is reset, so the client's retry finds whatever it did (a
        server restarted empty, another writer's append).
        """
        self._faults.arm_lost_reply(then)

    def refuse(self, on: bool = True) -> None:
        """Reset new connections as soon as they are accepted, and reset existing ones."""
        self._faults.refusing = on
        if on:
            self._relay.kill_links(reset=True)

    def reset_randomly(self, probability: float, seed: int | None = None) -> None:
        """Reset the connection of each forwarded chunk with the given probability."""
        self._faults.set_reset_probability(probability, seed)

    def clear(self) -> None:
        """Switch every fault off: traffic flows normally again.

        One-shot faults that already hit a request (a reply on its way to being lost)
        run their course.
        """
        self._faults.clear()
