"""Writes that reach the saver before their checkpoint, remembered until it is put.

LangGraph hands ``put`` and ``put_writes`` to its executor as independent
futures (``durability="async"``, the default, and ``"exit"``), so a task's
writes for checkpoint C can be stored before C, even before C's parent when
that put lags. A reader walking back from C never meets them, so C's put
names them in its entry (``CheckpointEntry.early``). Only the process that
made C writes on C before C is stored (any other process must first read C
back), and it does so through this saver: each saver keeps, per checkpoint
not yet put, the seqs of the writes it stored on it.

The registry is bounded: a checkpoint written on but never put by this saver
(a resumed run writing on a checkpoint read back) is forgotten after
``LIMIT`` others. A put first waits for writes on its checkpoint that are
still in flight: one stored but not yet acknowledged would otherwise be missed.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field

from ._tokens import WriteToken, resolve

__all__ = ["EarlyWrites"]

LIMIT = 4096
"""Checkpoints remembered at once, those put and those written on."""


@dataclass
class _Pending:
    seqs: list[int] = field(default_factory=list)
    in_flight: list[WriteToken[int]] = field(default_factory=list)


class EarlyWrites:
    """Per (session, checkpoint id): the seqs of writes stored before the checkpoint."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: OrderedDict[tuple[str, str], _Pending] = OrderedDict()
        self._put: OrderedDict[tuple[str, str], None] = OrderedDict()

    def begin(self, session: str, checkpoint_id: str) -> WriteToken[int] | None:
        """A write on the checkpoint is about to be stored: None if it was put
        already (the write lands after it), else a future for its seq."""
        key = (session, checkpoint_id)
        with self._lock:
            if key in self._put:
                return None
            pending = self._pending.get(key) or _Pending()
            self._pending[key] = pending
            self._pending.move_to_end(key)
            while len(self._pending) > LIMIT:
                self._pending.popitem(last=False)
            token: WriteToken[int] = WriteToken()
            pending.in_flight.append(token)
            return token

    def end(self, session: str, checkpoint_id: str, token: WriteToken[int],
            seq: int | None) -> None:
        """The write is stored at ``seq`` (None: it failed, or nothing was stored)."""
        with self._lock:
            pending = self._pending.get((session, checkpoint_id))
            if pending is not None and token in pending.in_flight:
                pending.in_flight.remove(token)
                if seq is not None:
                    pending.seqs.append(seq)
            waited = None if token.done() else token.ended(seq)
        resolve(waited, seq)

    def in_flight(self, session: str, checkpoint_id: str) -> list[WriteToken[int]]:
        with self._lock:
            pending = self._pending.get((session, checkpoint_id))
            return list(pending.in_flight) if pending else []

    def _waited(self, session: str, checkpoint_id: str) -> list[Future[int | None]]:
        """The futures of the writes on the checkpoint in flight, made for a waiter."""
        with self._lock:
            pending = self._pending.get((session, checkpoint_id))
            return [token.waited() for token in pending.in_flight] if pending else []

    def settled(self, session: str, checkpoint_id: str, timeout: float) -> None:
        """Wait (up to ``timeout`` each) for the writes on the checkpoint in flight."""
        for token in self._waited(session, checkpoint_id):
            try:
                token.result(timeout)
            except FutureTimeout:  # still unanswered: if it lands first, the put's
                return             # expect_version fails and the put looks again

    async def asettled(self, session: str, checkpoint_id: str, timeout: float) -> None:
        """``settled`` for a coroutine: waits without blocking the event loop."""
        for token in self._waited(session, checkpoint_id):
            try:  # shielded: a timeout here must not cancel the write's token
                await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(token)), timeout)
            except asyncio.TimeoutError:
                return

    def seqs(self, session: str, checkpoint_id: str) -> list[int]:
        """The seqs of the writes on the checkpoint stored so far."""
        with self._lock:
            pending = self._pending.get((session, checkpoint_id))
            return list(pending.seqs) if pending else []

    def put(self, session: str, checkpoint_id: str) -> None:
        """The checkpoint is stored: later writes land after it."""
        key = (session, checkpoint_id)
        with self._lock:
            self._pending.pop(key, None)
            self._put[key] = None
            self._put.move_to_end(key)
            while len(self._put) > LIMIT:
                self._put.popitem(last=False)
