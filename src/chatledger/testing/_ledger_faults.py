"""``ledger_faults``: a private Redis behind a fault proxy, with faults a test reads
like a sentence::

    with ledger_faults.outage():
        agent.reply("where is my order?")      # memory is unreachable
    with ledger_faults.latency(ms=300): ...
    ledger_faults.lose_next_reply()            # applied by Redis, the reply never arrives
    with ledger_faults.reset_connections(every=5): ...
    with ledger_faults.pause(): ...            # the server frozen (SIGSTOP)
    ledger_faults.kill(); ledger_faults.restart(empty=True)

Stores opened on :attr:`LedgerFaults.url` go through the proxy; the server is
the test's own, so killing or emptying it touches nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from ._proxy import FaultProxy
from ._redis_server import RedisServer

__all__ = ["LedgerFaults"]


class LedgerFaults:
    """Fault switches over one private redis-server and the proxy in front of it."""

    def __init__(self, server: RedisServer, proxy: FaultProxy) -> None:
        self.server = server
        self.proxy = proxy

    @property
    def url(self) -> str:
        """``redis://`` through the proxy: where the store under test should connect."""
        return f"redis://{self.proxy.url_netloc}/0"

    @contextmanager
    def outage(self) -> Iterator[None]:
        """Memory is unreachable: connections are reset and new ones refused."""
        self.proxy.refuse(True)
        try:
            yield
        finally:
            self.proxy.refuse(False)

    @contextmanager
    def latency(self, *, ms: float) -> Iterator[None]:
        """Every chunk each way is delayed by ``ms`` milliseconds."""
        self.proxy.latency(ms / 1000)
        try:
            yield
        finally:
            self.proxy.latency(0)

    @contextmanager
    def reset_connections(self, *, every: int, seed: int = 0) -> Iterator[None]:
        """About one forwarded chunk in ``every`` resets its connection (reproducibly)."""
        if every < 1:
            raise ValueError(f"every must be 1 or more, got {every}")
        self.proxy.reset_randomly(1 / every, seed=seed)
        try:
            yield
        finally:
            self.proxy.reset_randomly(0)

    @contextmanager
    def drip(self, *, byte_every: float) -> Iterator[None]:
        """Replies arrive a byte at a time: the store must still end within its deadline."""
        self.proxy.drip(byte_every)
        try:
            yield
        finally:
            self.proxy.drip(None)

    def lose_next_reply(self) -> None:
        """The next command reaches Redis and is applied; its reply is lost."""
        self.proxy.lose_next_reply()

    @contextmanager
    def pause(self) -> Iterator[None]:
        """The server is frozen (SIGSTOP): connections stay open, nothing answers."""
        self.server.pause()
        try:
            yield
        finally:
            self.server.resume()

    def kill(self) -> None:
        """The server dies (SIGKILL); ``restart()`` brings it back."""
        self.server.kill()

    def restart(self, *, empty: bool = True) -> None:
        """Stop the server and start it again on the same port.

        ``empty`` (the default): it comes back with nothing, as a server without
        persistence does. ``empty=False``: with what it held, as a server that
        persists does; a snapshot is saved first (``SAVE``). After :meth:`kill`
        there is nothing to save, and it comes back with nothing either way.
        """
        running = self.server.running
        if not empty and running:
            self.server.command("SAVE")
        # Killed, it saved nothing: an earlier restart's snapshot must not come back.
        self.server.restart(empty=empty or not running)

    def stop(self) -> None:
        self.proxy.stop()
        self.server.stop()
