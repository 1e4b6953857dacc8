# Generated from src/chatledger/langgraph/_async/runs.py by scripts/unasync.py: edit that file, not this one.
"""``ThreadRuns``: one run at a time on a thread, across processes.

The source of ``_sync/runs.py`` (``ThreadRuns``). A run takes the thread's
lease (``lease.py``; what it is and how the saver fences a run that lost it:
``runs.py``), runs the graph with its token in the config, and releases the
lease; a heartbeat renews the lease while the run runs. A second run on a
held thread follows the ``multitask_strategy``, in LangGraph Platform's words:
``"reject"`` raises ThreadBusy before the graph runs; ``"enqueue"`` waits
until the thread is free (at most ``wait`` seconds, then ThreadBusy) and runs
on the first run's result.
"""

from __future__ import annotations

import contextlib
import random
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from langchain_core.runnables import RunnableConfig

from ..._errors import ChatLedgerError, ConfigError
from .._beat import Beat
from .._entries import Lease
from .._runs import RUN_KEY, RunToken, ThreadBusy, seconds, strategy
from .lease import ThreadLease
from .saver import LedgerSaver

__all__ = ["ThreadRuns"]

FIRST_POLL = 0.02
"""Seconds an enqueued run first waits before it looks at the thread again;
doubled each time up to ``LAST_POLL``."""
LAST_POLL = 0.25
DURABILITY = {"durability": "sync"}
"""How a run stores its steps unless told otherwise: each step's checkpoint
before the next step starts. With LangGraph's default (``"async"``) the next
step runs while its checkpoint is stored, so a run that lost the thread would
learn it (its put refused) only after that step's model or tool call."""
RENEWALS = 3
"""Renewals per lease: the heartbeat renews a lease when a third of it is left."""


class ThreadRuns:
    """Run a compiled graph (``StateGraph.compile``, ``create_agent``) so that one
    run at a time writes each thread, across processes (the LangGraph page of the docs).

    The graph's checkpointer must be an ``LedgerSaver``. ``lease``: how
    long a run holds the thread without renewing it (a holder that died frees
    the thread after this); ``wait``: how long ``"enqueue"`` waits for it.
    """

    def __init__(self, graph: Any, *, multitask_strategy: str = "reject",
                 lease: float | timedelta = 60.0, wait: float | timedelta = 30.0) -> None:
        saver = getattr(graph, "checkpointer", None)
        if not isinstance(saver, LedgerSaver):
            raise ConfigError(f"{type(self).__name__} needs a graph compiled with "
                              f"checkpointer=LedgerSaver(...), not {saver!r}")
        self.graph = graph
        self.saver = saver
        self.multitask_strategy = strategy(multitask_strategy)
        self.lease = seconds("lease", lease, minimum=0.001, finite=True)
        self.wait = seconds("wait", wait, minimum=0.0)

    def invoke(self, input: Any, config: RunnableConfig, **kwargs: Any) -> Any:
        """``graph.invoke(input, config, **kwargs)`` holding the thread
        (``durability="sync"`` unless given: see ``DURABILITY``)."""
        with self.hold(config) as fenced:
            return self.graph.invoke(input, fenced, **{**DURABILITY, **kwargs})

    def stream(self, input: Any, config: RunnableConfig,
                      **kwargs: Any) -> Iterator[Any]:
        """``graph.stream(input, config, **kwargs)`` holding the thread until it ends
        (``durability="sync"`` unless given)."""
        with self.hold(config) as fenced:
            for chunk in self.graph.stream(input, fenced, **{**DURABILITY, **kwargs}):
                yield chunk

    @contextmanager
    def hold(self, config: RunnableConfig) -> Iterator[RunnableConfig]:
        """Hold the thread ``config`` names; yields the config to run the graph with.

        Raises ThreadBusy as the strategy says; a graph run with the yielded
        config after another run took the thread over raises LeaseLost.
        """
        configurable = config.get("configurable") or {}
        if configurable.get("thread_id") is None:
            raise ValueError("a run holds a thread: name it in config['configurable']"
                             "['thread_id']")
        thread_id = str(configurable["thread_id"])
        ledger = self.saver._ledger(thread_id, "", self.saver._user(config))
        lease = ThreadLease(ledger, uuid.uuid4().hex)
        token = self._take(lease, thread_id)
        fenced: RunnableConfig = {**config,
                                  "configurable": {**configurable, RUN_KEY: str(token)}}
        try:
            with Beat(self.lease / RENEWALS, lambda: lease.keep(token, self.lease)):
                yield fenced
        except BaseException:
            # The run's error is the one to raise; a lease not released expires.
            with contextlib.suppress(ChatLedgerError):
                lease.release(token)
            raise
        lease.release(token)

    def _take(self, lease: ThreadLease, thread_id: str) -> RunToken:
        started = time.monotonic()
        delay = FIRST_POLL
        while True:
            taken = lease.take(self.lease)
            if isinstance(taken, RunToken):
                return taken
            waited = time.monotonic() - started
            if self.multitask_strategy == "reject" or waited >= self.wait:
                raise _busy(thread_id, taken, lease.clock(), self.multitask_strategy, waited)
            time.sleep(min(delay * random.uniform(0.5, 1.0), self.wait - waited))
            delay = min(delay * 2, LAST_POLL)


def _busy(thread_id: str, holder: Lease, now: float, strategy: str,
          waited: float) -> ThreadBusy:
    left = max(holder.until or now, now) - now
    held = (f"thread {thread_id!r} is busy: run {holder.run} holds it (its lease lasts "
            f"{left:.1f} s more unless renewed)")
    if strategy == "reject":
        return ThreadBusy(thread_id, holder=holder.run, message=f"{held}; "
                          "multitask_strategy='reject' refused this run: nothing of it ran "
                          "or was stored")
    return ThreadBusy(thread_id, holder=holder.run, waited=waited, message=f"{held} after "
                      f"multitask_strategy='enqueue' waited {waited:.1f} s for it (wait=)")
