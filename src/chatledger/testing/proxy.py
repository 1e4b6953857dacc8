"""A real TCP proxy that injects network faults between a client and its server.

`FaultProxy` listens on loopback and forwards every accepted connection to an
upstream address, byte for byte, in background threads. While traffic flows,
tests switch faults on and off to reproduce what real networks do to a client:
connections closed or reset under it, replies that never arrive, replies cut in
half, latency, and servers that stop answering altogether::

    with RedisServer() as server, FaultProxy(server.host, server.port) as proxy:
        client = redis.Redis.from_url(f"redis://{proxy.url_netloc}/0")
        proxy.lose_next_reply()    # the next command is applied, its reply is lost
        ...
        proxy.clear()              # back to a healthy network

Only the standard library is used. Sockets are non-blocking and every wait is a
short poll, so `stop()` finishes in bounded time whatever state the faults left
the connections in.
"""

from __future__ import annotations

import errno
import random
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Literal, TypeVar

__all__ = ["FaultProxy"]

_CHUNK_SIZE = 65536
# How often a waiting thread wakes to notice a fault switch, a closed link or stop().
_POLL_INTERVAL = 0.02

_Direction = Literal["up", "down"]
_UP: _Direction = "up"
_DOWN: _Direction = "down"

_ProxyT = TypeVar("_ProxyT", bound="FaultProxy")


class _LinkClosed(Exception):
    """Raised inside a pump thread when its link was closed under it."""


def _set_nodelay(sock: socket.socket) -> None:
    # Requests and replies are small; Nagle's algorithm would add latency the test didn't ask for.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _close_socket(sock: socket.socket, *, reset: bool) -> None:
    try:
        if reset:
            # Linger on with a zero timeout makes close() abort the connection with RST.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        else:
            # FIN goes out now, so the peer reads EOF even if close() then aborts
            # because of input nobody read (held by a blackhole, say).
            sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass  # the peer is already gone; closing is all that is left to do
    sock.close()


class _Link:
    """One proxied connection: the accepted client socket and its upstream socket."""

    def __init__(self, link_id: int, client: socket.socket, upstream: socket.socket) -> None:
        self.id = link_id
        self.client = client
        self.upstream = upstream
        self.client_fd = client.fileno()
        self.upstream_fd = upstream.fileno()
        self.closed = threading.Event()
        # Set by lose_next_reply() before a request goes upstream: its reply must be dropped.
        self.reply_doomed = False
        # Held around every socket call and around close(): a socket must never be closed
        # between a pump picking it and using it, or a reused descriptor could be hit.
        self._io_lock = threading.Lock()
        self._open_directions = 2

    def recv(self, sock: socket.socket) -> bytes:
        with self._io_lock:
            if self.closed.is_set():
                raise _LinkClosed
            return sock.recv(_CHUNK_SIZE)

    def send(self, sock: socket.socket, data: memoryview) -> int:
        with self._io_lock:
            if self.closed.is_set():
                raise _LinkClosed
            try:
                return sock.send(data)
            except BlockingIOError:
                return 0

    def half_close(self, sock: socket.socket) -> bool:
        """Pass an end-of-stream on to `sock`; True once both directions have ended."""
        with self._io_lock:
            if self.closed.is_set():
                raise _LinkClosed
            sock.shutdown(socket.SHUT_WR)
            self._open_directions -= 1
            return self._open_directions == 0

    def close(self, *, reset: bool = False, on_close: Callable[[], None] | None = None) -> bool:
        """Close both sockets (with RST if `reset`); False if the link was already closed.

        `on_close` runs before the sockets close, so a peer that sees the close can
        already see whatever `on_close` recorded.
        """
        with self._io_lock:
            if self.closed.is_set():
                return False
            self.closed.set()
            if on_close is not None:
                on_close()
            _close_socket(self.client, reset=reset)
            _close_socket(self.upstream, reset=reset)
        return True

    def sleep(self, seconds: float) -> None:
        """Wait at least `seconds`, unless the link closes first."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            if self.closed.wait(remaining):
                raise _LinkClosed


class FaultProxy:
    """TCP proxy from a loopback port to `upstream_host:upstream_port`, with switchable faults.

    Every fault can be switched while traffic flows, from any thread. Persistent faults
    (`blackhole`, `latency`, `refuse`, `reset_randomly`) and armed one-shot faults
    (`cut_reply`, `lose_next_reply`) are all switched off by `clear()`; `close_all()` and
    `reset_all()` act once, immediately.

    Counters for assertions: `connections_accepted`, `bytes_up` (client to server),
    `bytes_down` (server to client) and `faults_injected`, which counts each time a
    fault hit traffic: a connection closed, reset or refused, a reply cut or lost.
    Latency and blackholing only shape traffic and are not counted.
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
        self._connect_timeout = connect_timeout
        self._listener: socket.socket | None = None
        self._port: int | None = None
        self._lock = threading.Lock()
        self._started = False
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._links: dict[int, _Link] = {}
        self._next_link_id = 0
        self._connections_accepted = 0
        self._bytes_up = 0
        self._bytes_down = 0
        self._faults_injected = 0
        self._blackholed = False
        self._refusing = False
        self._latency = 0.0
        self._cut_reply_armed = False
        self._cut_after: int | None = None
        self._lose_reply_armed = False
        self._reset_probability = 0.0
        self._rng = random.Random()

    # -- lifecycle ---------------------------------------------------------------------

    def start(self: _ProxyT) -> _ProxyT:
        """Bind the listening socket and start accepting connections. Returns self."""
        with self._lock:
            if self._started:
                raise RuntimeError("FaultProxy was already started; create a new one")
            self._started = True
        listener = socket.create_server(self._listen_address, backlog=128)
        listener.setblocking(False)
        self._listener = listener
        self._port = listener.getsockname()[1]
        self._spawn(self._accept_loop, f"faultproxy-accept-{self.port}")
        return self

    def stop(self, timeout: float = 2.0) -> None:
        """Close the listener and every connection, then join all threads (within `timeout`)."""
        with self._lock:
            self._stopping.set()
            links = list(self._links.values())
            threads = list(self._threads)
        for link in links:
            link.close()
        deadline = time.monotonic() + timeout
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        if self._listener is not None:
            self._listener.close()

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
        with self._lock:
            return self._connections_accepted

    @property
    def bytes_up(self) -> int:
        """Bytes forwarded from clients to the upstream server."""
        with self._lock:
            return self._bytes_up

    @property
    def bytes_down(self) -> int:
        """Bytes forwarded from the upstream server to clients."""
        with self._lock:
            return self._bytes_down

    @property
    def faults_injected(self) -> int:
        """Connections closed, reset or refused and replies cut or lost by a fault."""
        with self._lock:
            return self._faults_injected

    @property
    def active_connections(self) -> int:
        """Connections currently open through the proxy."""
        return len(self._open_links())

    # -- faults --------------------------------------------------------------------------

    def close_all(self) -> int:
        """Close every current connection gracefully (FIN); returns how many were closed."""
        return self._kill_links(reset=False)

    def reset_all(self) -> int:
        """Abort every current connection with RST; returns how many were reset."""
        return self._kill_links(reset=True)

    def blackhole(self, on: bool = True) -> None:
        """Hold all traffic in both directions while keeping connections open.

        New connections are still accepted. Held bytes stay unread, so a client hangs
        until its own timeout; connections still open after `clear()` get them late.
        """
        with self._lock:
            self._blackholed = on

    def latency(self, seconds: float) -> None:
        """Delay every forwarded chunk, in both directions, by at least `seconds`."""
        if seconds < 0:
            raise ValueError("latency must be >= 0")
        with self._lock:
            self._latency = seconds

    def cut_reply(self, after_bytes: int | None = None) -> None:
        """Cut the next server-to-client chunk short, then close that connection (one-shot).

        Forwards `after_bytes` bytes of the chunk, or half of it by default, but always
        at least one byte less than the whole chunk, so the reply really is incomplete.
        """
        if after_bytes is not None and after_bytes < 0:
            raise ValueError("after_bytes must be >= 0")
        with self._lock:
            self._cut_reply_armed = True
            self._cut_after = after_bytes

    def lose_next_reply(self) -> None:
        """Let the next request reach the server, drop its reply and reset (one-shot).

        The server applies the command but the client never learns whether it was.
        """
        with self._lock:
            self._lose_reply_armed = True

    def refuse(self, on: bool = True) -> None:
        """Reset new connections as soon as they are accepted, and reset existing ones."""
        with self._lock:
            self._refusing = on
        if on:
            self._kill_links(reset=True)

    def reset_randomly(self, probability: float, seed: int | None = None) -> None:
        """Reset the connection of each forwarded chunk with the given probability."""
        if not 0.0 <= probability <= 1.0:
            raise ValueError("probability must be between 0 and 1")
        with self._lock:
            self._reset_probability = probability
            self._rng = random.Random(seed)

    def clear(self) -> None:
        """Switch every fault off: traffic flows normally again.

        One-shot faults that already hit a request (a reply on its way to being lost)
        run their course.
        """
        with self._lock:
            self._blackholed = False
            self._refusing = False
            self._latency = 0.0
            self._cut_reply_armed = False
            self._lose_reply_armed = False
            self._reset_probability = 0.0

    # -- threads -------------------------------------------------------------------------

    def _spawn(self, target: Callable[..., None], name: str, *args: object) -> bool:
        with self._lock:
            if self._stopping.is_set():
                return False
            self._threads = [t for t in self._threads if t.is_alive()]
            thread = threading.Thread(target=target, name=name, args=args, daemon=True)
            self._threads.append(thread)
            thread.start()
        return True

    def _accept_loop(self) -> None:
        assert self._listener is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            while not self._stopping.is_set():
                if not selector.select(_POLL_INTERVAL):
                    continue
                try:
                    client, _ = self._listener.accept()
                except OSError:  # the client gave up before we accepted it
                    continue
                self._admit(client)

    def _admit(self, client: socket.socket) -> None:
        with self._lock:
            self._connections_accepted += 1
            refusing = self._refusing
        client.setblocking(False)
        _set_nodelay(client)
        if refusing:
            self._count_fault()
            _close_socket(client, reset=True)
        elif not self._spawn(self._serve, "faultproxy-serve", client):
            client.close()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = self._connect_upstream()
        except OSError:
            # The server is unreachable: the client sees what it would see without us.
            _close_socket(client, reset=True)
            return
        link = self._register(client, upstream)
        if link is None:
            return
        if self._spawn(self._pump, f"faultproxy-down-{link.id}", link, _DOWN):
            self._pump(link, _UP)
        else:
            link.close()

    def _connect_upstream(self) -> socket.socket:
        family, kind, proto, _, address = socket.getaddrinfo(
            self.upstream_host, self.upstream_port, type=socket.SOCK_STREAM
        )[0]
        upstream = socket.socket(family, kind, proto)
        try:
            upstream.setblocking(False)
            status = upstream.connect_ex(address)
            if status not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
                raise OSError(status, "cannot connect upstream")
            self._await_connected(upstream)
            _set_nodelay(upstream)
        except BaseException:
            upstream.close()
            raise
        return upstream

    def _await_connected(self, upstream: socket.socket) -> None:
        # Poll rather than block so that stop() is never held up by a slow connect.
        deadline = time.monotonic() + self._connect_timeout
        with selectors.DefaultSelector() as selector:
            selector.register(upstream, selectors.EVENT_WRITE)
            while not selector.select(_POLL_INTERVAL):
                if self._stopping.is_set() or time.monotonic() > deadline:
                    raise TimeoutError("upstream connect timed out")
        status = upstream.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if status:
            raise OSError(status, "cannot connect upstream")

    def _register(self, client: socket.socket, upstream: socket.socket) -> _Link | None:
        with self._lock:
            link = _Link(self._next_link_id, client, upstream)
            self._next_link_id += 1
            if not self._stopping.is_set():
                self._links[link.id] = link
                return link
        link.close()
        return None

    def _open_links(self) -> list[_Link]:
        with self._lock:
            for link_id in [i for i, link in self._links.items() if link.closed.is_set()]:
                del self._links[link_id]
            return list(self._links.values())

    # -- forwarding ----------------------------------------------------------------------

    def _pump(self, link: _Link, direction: _Direction) -> None:
        """Forward one direction of `link` until it ends, applying the current faults."""
        try:
            self._pump_chunks(link, direction)
        except _LinkClosed:
            pass
        except ConnectionResetError:
            link.close(reset=True)  # pass the peer's abort on to the other side
        except OSError:
            link.close()

    def _pump_chunks(self, link: _Link, direction: _Direction) -> None:
        if direction == _UP:
            src, dst, src_fd, dst_fd = link.client, link.upstream, link.client_fd, link.upstream_fd
        else:
            src, dst, src_fd, dst_fd = link.upstream, link.client, link.upstream_fd, link.client_fd
        # Registered by descriptor number: the socket objects may be closed by another thread.
        with selectors.DefaultSelector() as readable, selectors.DefaultSelector() as writable:
            readable.register(src_fd, selectors.EVENT_READ)
            writable.register(dst_fd, selectors.EVENT_WRITE)
            while not link.closed.is_set():
                self._hold_while_blackholed(link)  # leaves held bytes unread in the kernel
                if not readable.select(_POLL_INTERVAL):
                    continue
                try:
                    chunk = link.recv(src)
                except BlockingIOError:
                    continue
                if not chunk:
                    if link.half_close(dst):
                        link.close()
                    return
                self._forward(link, direction, chunk, dst, writable)

    def _hold_while_blackholed(self, link: _Link) -> None:
        while self._blackholed:
            if link.closed.wait(_POLL_INTERVAL):
                raise _LinkClosed

    def _forward(
        self,
        link: _Link,
        direction: _Direction,
        chunk: bytes,
        dst: socket.socket,
        writable: selectors.BaseSelector,
    ) -> None:
        # A chunk read just before the blackhole was switched on is held too.
        self._hold_while_blackholed(link)
        link.sleep(self._latency)
        if self._roll_random_reset():
            self._kill(link, reset=True)
        elif direction == _UP:
            self._forward_request(link, chunk, dst, writable)
        else:
            self._forward_reply(link, chunk, dst, writable)

    def _forward_request(
        self, link: _Link, chunk: bytes, dst: socket.socket, writable: selectors.BaseSelector
    ) -> None:
        # Doom the reply before the request leaves, so the reply cannot outrun the flag.
        if self._claim_lost_reply():
            link.reply_doomed = True
        self._send(link, _UP, chunk, dst, writable)

    def _forward_reply(
        self, link: _Link, chunk: bytes, dst: socket.socket, writable: selectors.BaseSelector
    ) -> None:
        if link.reply_doomed:
            self._kill(link, reset=True)
            return
        cut = self._claim_cut(len(chunk))
        if cut is None:
            self._send(link, _DOWN, chunk, dst, writable)
            return
        self._send(link, _DOWN, chunk[:cut], dst, writable)
        self._kill(link, reset=False)

    def _send(
        self,
        link: _Link,
        direction: _Direction,
        chunk: bytes,
        dst: socket.socket,
        writable: selectors.BaseSelector,
    ) -> None:
        pending = memoryview(chunk)
        while pending:
            sent = link.send(dst, pending)
            if sent:
                self._count_bytes(direction, sent)
                pending = pending[sent:]
            else:
                writable.select(_POLL_INTERVAL)  # the peer is slow: wait for buffer space

    # -- fault bookkeeping ---------------------------------------------------------------

    def _kill_links(self, *, reset: bool) -> int:
        return sum(self._kill(link, reset=reset) for link in self._open_links())

    def _kill(self, link: _Link, *, reset: bool) -> bool:
        return link.close(reset=reset, on_close=self._count_fault)

    def _count_fault(self) -> None:
        with self._lock:
            self._faults_injected += 1

    def _count_bytes(self, direction: _Direction, count: int) -> None:
        with self._lock:
            if direction == _UP:
                self._bytes_up += count
            else:
                self._bytes_down += count

    def _roll_random_reset(self) -> bool:
        with self._lock:
            probability = self._reset_probability
            return probability > 0.0 and self._rng.random() < probability

    def _claim_lost_reply(self) -> bool:
        with self._lock:
            armed, self._lose_reply_armed = self._lose_reply_armed, False
            return armed

    def _claim_cut(self, chunk_length: int) -> int | None:
        """Disarm cut_reply and return how many bytes of this chunk to forward, if armed."""
        with self._lock:
            if not self._cut_reply_armed:
                return None
            self._cut_reply_armed = False
            wanted = chunk_length // 2 if self._cut_after is None else self._cut_after
            return max(0, min(wanted, chunk_length - 1))
