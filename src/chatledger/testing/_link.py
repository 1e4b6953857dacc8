"""One proxied connection of `FaultProxy`: the client socket, its upstream socket, and
the socket helpers both ends need.

Sockets are non-blocking and every wait is a short poll, so a link can be closed
from any thread at any time and every thread using it notices within `POLL_INTERVAL`.
"""

from __future__ import annotations

import errno
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable

CHUNK_SIZE = 65536
# How often a waiting thread wakes to notice a fault switch, a closed link or stop().
POLL_INTERVAL = 0.02


class LinkClosed(Exception):
    """Raised inside a pump thread when its link was closed under it."""


def set_nodelay(sock: socket.socket) -> None:
    # Requests and replies are small; Nagle's algorithm would add latency the test didn't ask for.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def close_socket(sock: socket.socket, *, reset: bool) -> None:
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


def connect(host: str, port: int, timeout: float, stopping: threading.Event) -> socket.socket:
    """A non-blocking socket connected to `host:port`; gives up after `timeout` or on `stopping`."""
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setblocking(False)
        status = sock.connect_ex(address)
        if status not in (0, errno.EINPROGRESS, errno.EWOULDBLOCK):
            raise OSError(status, "cannot connect upstream")
        _await_connected(sock, timeout, stopping)
        set_nodelay(sock)
    except BaseException:
        sock.close()
        raise
    return sock


def _await_connected(sock: socket.socket, timeout: float, stopping: threading.Event) -> None:
    # Poll rather than block so that stop() is never held up by a slow connect.
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_WRITE)
        while not selector.select(POLL_INTERVAL):
            if stopping.is_set() or time.monotonic() > deadline:
                raise TimeoutError("upstream connect timed out")
    status = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if status:
        raise OSError(status, "cannot connect upstream")


class Link:
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
        self.on_lost_reply: Callable[[], None] | None = None  # run once the reply is dropped
        # Held around every socket call and around close(): a socket must never be closed
        # between a pump picking it and using it, or a reused descriptor could be hit.
        self._io_lock = threading.Lock()
        self._open_directions = 2

    def recv(self, sock: socket.socket) -> bytes:
        with self._io_lock:
            if self.closed.is_set():
                raise LinkClosed
            return sock.recv(CHUNK_SIZE)

    def send(self, sock: socket.socket, data: memoryview) -> int:
        with self._io_lock:
            if self.closed.is_set():
                raise LinkClosed
            try:
                return sock.send(data)
            except BlockingIOError:
                return 0

    def half_close(self, sock: socket.socket) -> bool:
        """Pass an end-of-stream on to `sock`; True once both directions have ended."""
        with self._io_lock:
            if self.closed.is_set():
                raise LinkClosed
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
            close_socket(self.client, reset=reset)
            close_socket(self.upstream, reset=reset)
        return True

    def sleep(self, seconds: float) -> None:
        """Wait at least `seconds`, unless the link closes first."""
        deadline = time.monotonic() + seconds
        while (remaining := deadline - time.monotonic()) > 0:
            if self.closed.wait(remaining):
                raise LinkClosed
