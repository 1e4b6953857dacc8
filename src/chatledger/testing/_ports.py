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


# Port blocks for Redis Cluster nodes: a node listens on p and on p + BUS_OFFSET
# (the cluster bus), so both must be free. Blocks sit below Linux's ephemeral
# range (32768+), where free_port() picks, so the two never collide; each xdist
# worker scans its own stretch of them.
BUS_OFFSET = 10000
_BLOCK_BASE = 12000
_WORKER_SPAN = 1000


def port_block(count: int, host: str = "127.0.0.1", worker: int = 0, skip: int = 0) -> list[int]:
    """`count` consecutive ports on `host`, each free together with its bus port.

    Starts `skip` blocks into `worker`'s stretch; raises RuntimeError when the
    stretch has no free block left.
    """
    first = _BLOCK_BASE + worker * _WORKER_SPAN + skip * count
    for start in range(first, _BLOCK_BASE + (worker + 1) * _WORKER_SPAN - count + 1, count):
        ports = list(range(start, start + count))
        if all(_bindable(host, port) and _bindable(host, port + BUS_OFFSET) for port in ports):
            return ports
    raise RuntimeError(f"no block of {count} free ports (and bus ports) for worker {worker}")


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As redis-server binds: a port whose old connections linger in TIME_WAIT is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return False
        return True
