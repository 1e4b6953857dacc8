"""What each LedgerStore class adds by hand to its generated source.

``AsyncLedgerStore`` serves LangGraph's sync calls (``store.get`` from a tool
run in a worker thread) on the event loop it was opened on, as LangGraph's
``AsyncPostgresStore`` does; ``LedgerStore`` serves the async ones in a
worker thread, as ``SqliteStore`` does. Each runs its TTL sweeper the way its
callers live: an asyncio task, or a daemon thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import threading
from collections.abc import Iterable
from typing import Any

from langgraph.store.base import Op, Result, TTLConfig

from ._bridge import LoopBound

__all__ = ["BATCHES_AT_ONCE", "AsyncBridged", "Bridged"]

BATCHES_AT_ONCE = 8
"""Batches (each ``get``, ``put``, ... is one) a store runs at once; more wait their
turn before any of their calls starts, so that its deadline (``retry.deadline``)
measures the call, not the queue before it. Eight stay within the connection
pools (PostgreSQL's 20, Redis's 50 by default) and SQLite's worker threads."""

_log = logging.getLogger("chatledger.langgraph")
_MAKING = threading.Lock()


def _interval(ttl_config: TTLConfig | None) -> float | None:
    """Seconds between sweeps, or None when the TTL config asks for no sweeper."""
    minutes = (ttl_config or {}).get("sweep_interval_minutes")
    return None if not minutes else float(minutes) * 60.0


class AsyncBridged(LoopBound):
    """Sync batches on the async store's loop, turns for its batches, and a sweeper task."""

    ttl_config: TTLConfig | None
    _sweeper: asyncio.Task[None] | None = None
    _turns: asyncio.Semaphore | None = None

    def turn(self) -> asyncio.Semaphore:
        """A batch's turn among the ``BATCHES_AT_ONCE`` that run at once."""
        if self._turns is None:  # made on first use: on the store's loop
            self._turns = asyncio.Semaphore(BATCHES_AT_ONCE)
        return self._turns

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        loop = self.usable_loop(
            not_running="AsyncLedgerStore's sync methods run on the event loop the store was "
                        "opened on, and that loop is not running: use the async methods "
                        "(aget, aput, ...), or LedgerStore",
            own_thread="AsyncLedgerStore's sync methods were called on its own event loop's "
                       "thread, where they would wait for themselves: await aget(), aput(), "
                       "...")
        owner: Any = self
        return asyncio.run_coroutine_threadsafe(  # type: ignore[no-any-return]
            owner.abatch(list(ops)), loop).result()

    async def start_ttl_sweeper(self) -> asyncio.Task[None] | None:
        """Sweep expired items every ``sweep_interval_minutes`` of the TTL config,
        in a task of the running loop; None when the config sets no interval."""
        interval = _interval(self.ttl_config)
        if interval is None:
            return None
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_every(interval))
        return self._sweeper

    async def _sweep_every(self, interval: float) -> None:
        owner: Any = self
        while True:
            await asyncio.sleep(interval)
            try:
                await owner.sweep_ttl()
            except Exception:  # the next sweep tries again; reads never return expired items
                _log.exception("the TTL sweep failed")

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper task; whether it stopped within ``timeout`` seconds."""
        task, self._sweeper = self._sweeper, None
        if task is None:
            return True
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=timeout)
        return bool(done)


class _Turns:
    """``count`` turns for threads: a queue of tokens, taken on entering and given back
    on leaving. A semaphore, as ``threading.Semaphore`` is one, but in C (a
    ``SimpleQueue``): that one, written in Python, cost each put and get more."""

    __slots__ = ("_tokens",)

    def __init__(self, count: int) -> None:
        self._tokens: queue.SimpleQueue[None] = queue.SimpleQueue()
        for _ in range(count):
            self._tokens.put(None)

    def __enter__(self) -> None:
        self._tokens.get()

    def __exit__(self, *exc: object) -> None:
        self._tokens.put(None)


class Bridged:
    """Async batches in a worker thread, turns for its batches, and a sweeper thread."""

    ttl_config: TTLConfig | None
    _stop_sweeping: threading.Event | None = None
    _sweeper_thread: threading.Thread | None = None
    _turns: _Turns | None = None

    def turn(self) -> _Turns:
        """A batch's turn among the ``BATCHES_AT_ONCE`` that run at once."""
        if self._turns is None:
            with _MAKING:  # two threads' first batches make one
                if self._turns is None:
                    self._turns = _Turns(BATCHES_AT_ONCE)
        return self._turns

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        owner: Any = self
        return await asyncio.get_running_loop().run_in_executor(
            None, owner.batch, list(ops))

    def start_ttl_sweeper(self) -> concurrent.futures.Future[None]:
        """Sweep expired items every ``sweep_interval_minutes`` of the TTL config in a
        daemon thread; the future is done when the sweeper stops (at once when the
        config sets no interval)."""
        stopped: concurrent.futures.Future[None] = concurrent.futures.Future()
        interval = _interval(self.ttl_config)
        if interval is None:
            stopped.set_result(None)
            return stopped
        self.stop_ttl_sweeper()
        stop = self._stop_sweeping = threading.Event()
        self._sweeper_thread = threading.Thread(
            target=self._sweep_every, args=(interval, stop, stopped),
            name="chatledger-store-sweeper", daemon=True)
        self._sweeper_thread.start()
        return stopped

    def _sweep_every(self, interval: float, stop: threading.Event,
                     stopped: concurrent.futures.Future[None]) -> None:
        owner: Any = self
        try:
            while not stop.wait(interval):
                try:
                    owner.sweep_ttl()
                except Exception:  # the next sweep tries again; reads never return expired items
                    _log.exception("the TTL sweep failed")
        finally:
            stopped.set_result(None)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; whether it stopped within ``timeout`` seconds."""
        stop, thread = self._stop_sweeping, self._sweeper_thread
        self._stop_sweeping = self._sweeper_thread = None
        if stop is None or thread is None:
            return True
        stop.set()
        thread.join(timeout)
        return not thread.is_alive()
