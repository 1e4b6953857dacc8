# Generated from src/chatledger/_backends/postgres/_async/pool.py by scripts/unasync.py: edit that file, not this one.
"""psycopg_pool's pool, with a short way for a free connection.

For every connection it hands out and takes back, free or not, psycopg_pool
logs three messages (each a logger call even when nothing is logged), counts
its stats, and passes a check loop, a reset and a maintenance hand-off: about
a tenth of a LedgerStore put's client work (profile in benchmarks/RESULTS.md).
Where a connection is ready and the pool has no ``check`` callback, this pool
hands it out under the pool's own lock, as psycopg_pool does; it takes a
connection back the same way when the connection is idle (no transaction
left open), still within its lifetime, and no caller waits for one. Anything
else (a caller who must wait, a broken or expired connection, a closed pool,
a ``reset`` callback) goes psycopg_pool's way. The pool's stats then count
only the requests that went its way.

It reads psycopg_pool's own fields (its deque, lock and waiting queue): a
psycopg_pool without them (:func:`_shortcut_fields`) always goes its way.
"""

from __future__ import annotations

from time import monotonic
from typing import Any

from psycopg.pq import TransactionStatus
from psycopg_pool import ConnectionPool

__all__ = ["Pool"]

_IDLE = TransactionStatus.IDLE


class Pool(ConnectionPool[Any]):
    """psycopg_pool's pool; a free connection is handed out and taken back directly."""

    _shortcut = False  # set on open, where psycopg_pool's fields are all there

    def open(self, wait: bool = False, timeout: float = 30.0) -> None:
        super().open(wait=wait, timeout=timeout)
        self._shortcut = self._check is None and self._reset is None and _shortcut_fields(self)

    def getconn(self, timeout: float | None = None) -> Any:
        if self._shortcut and self._pool:
            with self._lock:  # psycopg_pool's critical section, as its own getconn
                conn = self._pool.popleft() if self._pool and not self._closed else None
                if conn is not None and len(self._pool) < self._nconns_min:
                    self._nconns_min = len(self._pool)  # what its shrinking reads
            if conn is not None:
                conn._pool = self  # out of the pool: its close() returns it
                return conn
        return super().getconn(timeout)

    def putconn(self, conn: Any) -> None:
        if not (self._shortcut and conn._pool is self
                and conn.pgconn.transaction_status == _IDLE
                and self._drained_at < conn._created_at and monotonic() < conn._expire_at):
            super().putconn(conn)  # broken, in a transaction, expired: its way
            return
        with self._lock:
            if not (self._closed or self._waiting):
                conn._pool = None  # in the pool: no reference loop (psycopg_pool's rule)
                self._pool.append(conn)
                return
        super().putconn(conn)  # a caller waits for it, or the pool closed


def _shortcut_fields(pool: ConnectionPool[Any]) -> bool:
    """Whether ``pool`` has the fields the short way reads (psycopg_pool 3.2 and 3.3)."""
    return all(hasattr(pool, name) for name in
               ("_pool", "_lock", "_closed", "_waiting", "_nconns_min", "_drained_at"))
