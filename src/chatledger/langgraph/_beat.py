"""A lease's heartbeat: renew it every so often while its run runs.

Hand-written in both forms (an asyncio task, a thread): ``_async/runs.py``
uses ``AsyncBeat``, and its generated twin ``Beat``. A beat that finds the
lease lost stops; one that fails (the store unreachable) tries again at the
next beat, while the lease lasts.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from types import TracebackType

from .._errors import ChatLedgerError

__all__ = ["AsyncBeat", "Beat"]


class AsyncBeat:
    """``async with AsyncBeat(every, renew):`` awaits ``renew()`` every ``every``
    seconds until the block ends or ``renew`` returns False."""

    def __init__(self, every: float, renew: Callable[[], Awaitable[bool]]) -> None:
        self.every = every
        self.renew = renew
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> AsyncBeat:
        self._task = asyncio.get_running_loop().create_task(self._beat())
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        assert self._task is not None
        self._task.cancel()
        # Wait until it ended (cancelled, or done when the lease was lost), raising nothing.
        await asyncio.wait([self._task])

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            try:
                if not await self.renew():
                    return
            except ChatLedgerError:
                continue


class Beat:
    """``with Beat(every, renew):`` calls ``renew()`` on a thread of its own every
    ``every`` seconds until the block ends or ``renew`` returns False."""

    def __init__(self, every: float, renew: Callable[[], bool]) -> None:
        self.every = every
        self.renew = renew
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="chatledger-lease", daemon=True)

    def __enter__(self) -> Beat:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            try:
                if not self.renew():
                    return
            except ChatLedgerError:
                continue
