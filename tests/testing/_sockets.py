"""Socket helpers for the testing-kit tests: hand-made RESP, exact reads, waits."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

from chatledger.testing._proxy import FaultProxy

PING = b"*1\r\n$4\r\nPING\r\n"
PONG = b"+PONG\r\n"


def resp(*args: str | bytes) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg.encode() if isinstance(arg, str) else arg
        parts += [b"$%d\r\n" % len(data), data, b"\r\n"]
    return b"".join(parts)


def bulk(data: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(data), data)


def connect(proxy: FaultProxy, timeout: float = 5.0) -> socket.socket:
    return socket.create_connection((proxy.host, proxy.port), timeout=timeout)


def recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError(f"EOF after {len(data)} of {size} bytes")
        data += chunk
    return data


def recv_pieces(sock: socket.socket, size: int) -> list[bytes]:
    """Read `size` bytes and return them as the pieces each recv() returned."""
    pieces: list[bytes] = []
    while (received := sum(map(len, pieces))) < size:
        piece = sock.recv(size - received)
        if not piece:
            raise ConnectionError(f"EOF after {received} of {size} bytes")
        pieces.append(piece)
    return pieces


def recv_until_eof(sock: socket.socket) -> bytes:
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def roundtrip(sock: socket.socket, request: bytes, reply: bytes) -> None:
    sock.sendall(request)
    assert recv_exactly(sock, len(reply)) == reply


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


def proxy_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("faultproxy-")]


def stop_within(proxy: FaultProxy, seconds: float) -> bool:
    stopper = threading.Thread(target=proxy.stop)
    stopper.start()
    stopper.join(seconds)
    return not stopper.is_alive()
