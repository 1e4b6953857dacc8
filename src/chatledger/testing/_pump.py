"""Forwarding of one direction of a `FaultProxy` link, through whatever faults are on.

Each link has two pump threads, one per direction. A pump reads a chunk, lets the
faults shape it (hold it, delay it, cut it, drop it, drip it, or kill the link),
and writes what is left to the other side.
"""

from __future__ import annotations

import selectors
import socket

from ._faults import UP, Direction, Faults
from ._link import POLL_INTERVAL, Link, LinkClosed


def pump(link: Link, direction: Direction, faults: Faults) -> None:
    """Forward one direction of `link` until it ends, applying the current faults."""
    try:
        _pump_chunks(link, direction, faults)
    except LinkClosed:
        pass
    except ConnectionResetError:
        link.close(reset=True)  # pass the peer's abort on to the other side
    except OSError:
        link.close()


def _pump_chunks(link: Link, direction: Direction, faults: Faults) -> None:
    if direction == UP:
        src, dst, src_fd, dst_fd = link.client, link.upstream, link.client_fd, link.upstream_fd
    else:
        src, dst, src_fd, dst_fd = link.upstream, link.client, link.upstream_fd, link.client_fd
    # Registered by descriptor number: the socket objects may be closed by another thread.
    with selectors.DefaultSelector() as readable, selectors.DefaultSelector() as writable:
        readable.register(src_fd, selectors.EVENT_READ)
        writable.register(dst_fd, selectors.EVENT_WRITE)
        out = _Forwarder(link, direction, faults, dst, writable)
        while not link.closed.is_set():
            _hold_while_blackholed(link, faults)  # leaves held bytes unread in the kernel
            if not readable.select(POLL_INTERVAL):
                continue
            try:
                chunk = link.recv(src)
            except BlockingIOError:
                continue
            if not chunk:
                if link.half_close(dst):
                    link.close()
                return
            out.forward(chunk)


def _hold_while_blackholed(link: Link, faults: Faults) -> None:
    while faults.blackholed:
        if link.closed.wait(POLL_INTERVAL):
            raise LinkClosed


class _Forwarder:
    """Writes the chunks one pump read to the other side of the link, faults applied."""

    def __init__(
        self,
        link: Link,
        direction: Direction,
        faults: Faults,
        dst: socket.socket,
        writable: selectors.BaseSelector,
    ) -> None:
        self.link = link
        self.direction = direction
        self.faults = faults
        self.dst = dst
        self.writable = writable

    def forward(self, chunk: bytes) -> None:
        # A chunk read just before the blackhole was switched on is held too.
        _hold_while_blackholed(self.link, self.faults)
        self.link.sleep(self.faults.latency)
        if self.faults.roll_random_reset():
            self.faults.kill(self.link, reset=True)
        elif self.direction == UP:
            self._forward_request(chunk)
        else:
            self._forward_reply(chunk)

    def _forward_request(self, chunk: bytes) -> None:
        # Doom the reply before the request leaves, so the reply cannot outrun the flag.
        doomed, then = self.faults.claim_lost_reply()
        if doomed:
            self.link.reply_doomed, self.link.on_lost_reply = True, then
        self._send_all(memoryview(chunk))

    def _forward_reply(self, chunk: bytes) -> None:
        if self.link.reply_doomed:
            if self.link.on_lost_reply is not None:
                self.link.on_lost_reply()  # before the client learns anything
                self.link.on_lost_reply = None
            self.faults.kill(self.link, reset=True)
            return
        cut = self.faults.claim_cut(len(chunk))
        if cut is None:
            self._drip(chunk)
            return
        self._drip(chunk[:cut])
        self.faults.kill(self.link, reset=False)

    def _drip(self, chunk: bytes) -> None:
        """Send a reply one byte at a time while dripping is on, the rest whole."""
        pending = memoryview(chunk)
        # Re-read before every byte, so clear() lets the rest of a long reply go at once.
        while pending and (pause := self.faults.drip_every) is not None:
            self.link.sleep(pause)
            self._send_all(pending[:1])
            pending = pending[1:]
        self._send_all(pending)

    def _send_all(self, pending: memoryview) -> None:
        while pending:
            sent = self.link.send(self.dst, pending)
            if sent:
                self.faults.count_bytes(self.direction, sent)
                pending = pending[sent:]
            else:
                self.writable.select(POLL_INTERVAL)  # the peer is slow: wait for buffer space
