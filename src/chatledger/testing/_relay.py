"""The threads behind a `FaultProxy`: the listener, and two pumps for every connection.

An accept thread takes each client connection, a serve thread dials the upstream
server for it, then pumps one direction itself while a second thread pumps the
other. Every thread is registered, so `stop()` can close all links and join all
threads within a bounded time.
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
from collections.abc import Callable

from ._faults import DOWN, UP, Faults
from ._link import POLL_INTERVAL, Link, close_socket, connect, set_nodelay
from ._pump import pump


class Relay:
    """Accepts clients on a listening socket and relays each to `upstream`, through `faults`."""

    def __init__(self, upstream: tuple[str, int], faults: Faults, connect_timeout: float) -> None:
        self._upstream = upstream
        self._faults = faults
        self._connect_timeout = connect_timeout
        self._listener: socket.socket | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._links: dict[int, Link] = {}
        self._next_link_id = 0

    def start(self, listen_address: tuple[str, int]) -> int:
        """Bind the listener and start accepting; returns the port it listens on."""
        listener = socket.create_server(listen_address, backlog=128)
        listener.setblocking(False)
        self._listener = listener
        port: int = listener.getsockname()[1]
        self._spawn(self._accept_loop, f"faultproxy-accept-{port}")
        return port

    def stop(self, timeout: float) -> None:
        """Close the listener and every link, then join all threads (within `timeout`)."""
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

    def open_links(self) -> list[Link]:
        with self._lock:
            for link_id in [i for i, link in self._links.items() if link.closed.is_set()]:
                del self._links[link_id]
            return list(self._links.values())

    def kill_links(self, *, reset: bool) -> int:
        """Close every open link as a fault; returns how many were closed."""
        return sum(self._faults.kill(link, reset=reset) for link in self.open_links())

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
                if not selector.select(POLL_INTERVAL):
                    continue
                try:
                    client, _ = self._listener.accept()
                except OSError:  # the client gave up before we accepted it
                    continue
                self._admit(client)

    def _admit(self, client: socket.socket) -> None:
        refusing = self._faults.count_accepted()
        client.setblocking(False)
        set_nodelay(client)
        if refusing:
            self._faults.count_fault()
            close_socket(client, reset=True)
        elif not self._spawn(self._serve, "faultproxy-serve", client):
            client.close()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = connect(*self._upstream, self._connect_timeout, self._stopping)
        except OSError:
            # The server is unreachable: the client sees what it would see without us.
            close_socket(client, reset=True)
            return
        link = self._register(client, upstream)
        if link is None:
            return
        if self._spawn(pump, f"faultproxy-down-{link.id}", link, DOWN, self._faults):
            pump(link, UP, self._faults)
        else:
            link.close()

    def _register(self, client: socket.socket, upstream: socket.socket) -> Link | None:
        with self._lock:
            link = Link(self._next_link_id, client, upstream)
            self._next_link_id += 1
            if not self._stopping.is_set():
                self._links[link.id] = link
                return link
        link.close()
        return None
