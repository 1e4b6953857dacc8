"""The async saver seen through the sync saver's method names, so that the tests
written once against ``LedgerSaver`` also run through ``AsyncLedgerSaver``.

Coroutines run on the one background event loop of :mod:`tests.blocking`.
"""

from __future__ import annotations

from typing import Any

from chatledger.langgraph import AsyncLedgerSaver
from tests.blocking import Blocking, _the_loop

_ASYNC_TWINS = frozenset({
    "get_tuple", "list", "put", "put_writes", "delete_thread", "delete_for_runs",
    "copy_thread", "prune",
})


class BlockingSaver:
    """``saver.put(...)`` runs ``await async_saver.aput(...)`` and waits for it."""

    def __init__(self, saver: AsyncLedgerSaver) -> None:
        self.saver = saver
        self.store = Blocking(saver.store)
        self._methods = Blocking(saver)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> BlockingSaver:
        async def opened() -> AsyncLedgerSaver:
            return await AsyncLedgerSaver.from_url(url, **options)

        return cls(_the_loop().run(opened()))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._methods, "a" + name if name in _ASYNC_TWINS else name)

    def __enter__(self) -> BlockingSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self._methods.aclose()
