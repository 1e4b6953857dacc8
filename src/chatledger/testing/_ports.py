"""Loopback ports for private servers: pick a free one, and pick again when another
process takes it between the pick and the server's bind."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable

_PORT_ATTEMPTS = 5


class PortTaken(RuntimeError):
    """A server could not bind its port: another process got there first."""


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on `host` that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


def launch_on_free_port(launch: Callable[[int], None], host: str) -> None:
    """Call `launch(port)` on a free port, with a new one while it raises PortTaken."""
    for _ in range(_PORT_ATTEMPTS):
        with contextlib.suppress(PortTaken):
            launch(free_port(host))
            return
    raise RuntimeError(f"redis-server found no free port in {_PORT_ATTEMPTS} attempts")
