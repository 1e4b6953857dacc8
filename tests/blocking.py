"""A sync view of the async store, so that the whole contract suite, written
once against the sync API, also runs through the async store and the native
async backends.

Every coroutine runs on one event loop in a background thread (so that a
Redis pool stays on the loop that made it); the test thread waits for it.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncIterator, Coroutine
from typing import Any, TypeVar

from chatledger import AsyncSession, AsyncStore, open_async_store
from chatledger._backends import AsyncBackend

T = TypeVar("T")

_WRAPPED = (AsyncStore, AsyncSession, AsyncBackend)


class _Loop:
    """An event loop running in a daemon thread, for as long as the process."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, name="async-contract", daemon=True).start()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()


_loops: list[_Loop] = []
_lock = threading.Lock()


def _the_loop() -> _Loop:
    with _lock:
        if not _loops:
            _loops.append(_Loop())
        return _loops[0]


class Blocking:
    """Calls the async object's methods and waits for them; async iterators become lists."""

    def __init__(self, target: Any) -> None:
        self._target = target

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value):
            return _wrapped(value)

        def call(*args: Any, **kwargs: Any) -> Any:
            result = value(*args, **kwargs)
            if inspect.isawaitable(result):
                return _wrapped(_the_loop().run(_awaited(result)))
            if inspect.isasyncgen(result):
                return iter(_the_loop().run(_drained(result)))
            return _wrapped(result)

        return call

    def __enter__(self) -> Blocking:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return repr(self._target)


def open_blocking_store(url: str, **options: Any) -> Any:
    """``open_async_store`` seen through :class:`Blocking`."""
    return Blocking(_the_loop().run(open_async_store(url, **options)))


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


async def _drained(iterator: AsyncIterator[T]) -> list[T]:
    return [item async for item in iterator]


def _wrapped(value: Any) -> Any:
    return Blocking(value) if isinstance(value, _WRAPPED) else value
