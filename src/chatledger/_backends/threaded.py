"""A sync backend served to asyncio callers from worker threads.

For backends whose driver has no async form (SQLite's ``sqlite3``): each call,
opening included, runs in a thread, off the event loop. Cancelling the awaiting task (the call's
deadline) leaves the thread to finish its statement, which the backend bounds
by its own timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from .._checks import Check
from .._results import Ack
from ._async.base import AsyncBackend
from ._sync.base import Backend
from .contract import Batch, HeadPage, RawHistory, RawInfo, ReadQuery, Reseal, SessionPage

__all__ = ["ThreadedAsyncBackend"]

T = TypeVar("T")


class ThreadedAsyncBackend(AsyncBackend):
    """Each operation of ``backend`` in a worker thread."""

    def __init__(self, backend: Backend) -> None:
        super().__init__(backend.url, backend.options, {})
        self.backend = backend
        self.supports_users = backend.supports_users

    async def open(self) -> None:
        await _in_thread(self.backend.open)

    async def append(self, session: str, batch: Batch) -> Ack:
        return await _in_thread(self.backend.append, session, batch)

    async def read(self, session: str, query: ReadQuery) -> RawHistory:
        return await _in_thread(self.backend.read, session, query)

    async def info(self, session: str) -> RawInfo | None:
        return await _in_thread(self.backend.info, session)

    async def trim(self, session: str, keep_last: int, through_seq: int | None = None) -> int:
        return await _in_thread(self.backend.trim, session, keep_last, through_seq)

    async def delete(self, session: str) -> bool:
        return await _in_thread(self.backend.delete, session)

    async def list_sessions(self, prefix: str, cursor: str | None) -> SessionPage:
        return await _in_thread(self.backend.list_sessions, prefix, cursor)

    async def heads(self, prefix: str, cursor: str | None) -> HeadPage:
        return await _in_thread(self.backend.heads, prefix, cursor)

    async def group_heads(self, prefix: str, separator: str, cursor: str | None) -> HeadPage:
        return await _in_thread(self.backend.group_heads, prefix, separator, cursor)

    async def purge(self, prefix: str) -> int:
        return await _in_thread(self.backend.purge, prefix)

    async def user_sessions(self, user: str) -> list[str]:
        return await _in_thread(self.backend.user_sessions, user)

    async def forget_session(self, user: str, session: str) -> bool:
        return await _in_thread(self.backend.forget_session, user, session)

    async def reseal(self, session: str, entries: list[Reseal]) -> int:
        return await _in_thread(self.backend.reseal, session, entries)

    async def namespaces(self) -> list[str] | None:
        return await _in_thread(self.backend.namespaces)

    async def close(self) -> None:
        await _in_thread(self.backend.close)

    async def checks(self) -> list[Check]:
        return await _in_thread(self.backend.checks)

    async def corrupt_entry(self, session: str, seq: int, blob: bytes) -> None:
        await _in_thread(self.backend.corrupt_entry, session, seq, blob)


async def _in_thread(function: Callable[..., T], *args: Any) -> T:
    return await asyncio.to_thread(function, *args)
