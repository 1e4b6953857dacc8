"""The asynchronous store: ``await open_async_store(url)``.

It mirrors :mod:`chatledger.store` method for method; all the logic that does
no I/O lives once in :mod:`chatledger._core` (a test pins the two surfaces).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from functools import partial
from types import TracebackType
from typing import Any, TypeVar

from . import _core
from ._retry import acall_with_retry
from .backends import AsyncBackend, build_async_backend
from .messages import Message
from .options import StoreOptions, split_options
from .results import Ack, History, SessionInfo
from .url import parse_url
from .validation import check_key

__all__ = ["AsyncSession", "AsyncStore", "open_async_store"]

T = TypeVar("T")


async def open_async_store(url: str = "sqlite:///chatledger.db", **options: Any) -> AsyncStore:
    """Open the store at ``url`` for asyncio; see :func:`chatledger.open_store`."""
    parsed = parse_url(url)
    common, extra = split_options(parsed.query, options)
    return AsyncStore(build_async_backend(parsed, common, extra))


class AsyncStore:
    """Sessions of one namespace in one backend, for asyncio; an async context manager."""

    def __init__(self, backend: AsyncBackend) -> None:
        self._backend = backend
        self.options: StoreOptions = backend.options
        self.url = backend.url.redacted()

    @property
    def namespace(self) -> str:
        return self.options.namespace

    def session(self, session_id: str) -> AsyncSession:
        """A handle on one session; does no I/O."""
        return AsyncSession(self, check_key(session_id, "session id"))

    async def sessions(self, prefix: str = "") -> AsyncIterator[str]:
        """Ids of live sessions that start literally with ``prefix``, in pages."""
        check_key(prefix, "prefix", empty=True)
        cursor: str | None = None
        while True:
            page = await self._call(partial(self._backend.list_sessions, prefix, cursor))
            for session_id in page.ids:
                yield session_id
            if page.cursor is None:
                return
            cursor = page.cursor

    async def purge(self, prefix: str = "") -> int:
        """Delete every session whose id starts literally with ``prefix``."""
        check_key(prefix, "prefix", empty=True)
        return await self._call(lambda: self._backend.purge(prefix))

    async def close(self) -> None:
        await self._backend.close()

    async def __aenter__(self) -> AsyncStore:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<AsyncStore {self.url} namespace={self.namespace!r}>"

    async def _call(self, operation: Callable[[], Awaitable[T]]) -> T:
        return await acall_with_retry(self.options, operation)


class AsyncSession:
    """One conversation's ledger, for asyncio. Cheap to create; holds no connection."""

    def __init__(self, store: AsyncStore, session_id: str) -> None:
        self.store = store
        self.id = session_id
        self._backend = store._backend

    async def append(
        self, messages: Sequence[Message], *, expect_version: int | None = None
    ) -> Ack:
        """Store ``messages`` as one atomic batch; safe to retry with the same ids."""
        batch = _core.make_batch(messages, expect_version, self.store.options.max_message_bytes)
        return await self.store._call(lambda: self._backend.append(self.id, batch))

    async def read(
        self,
        *,
        last: int | None = None,
        after: int | None = None,
        limit: int | None = None,
        min_version: int | None = None,
    ) -> History:
        """The ``last`` N messages, or those after seq ``after`` (at most ``limit``)."""
        query = _core.make_query(last, after, limit)
        floor = _core.check_min_version(min_version)
        raw = await self.store._call(lambda: self._backend.read(self.id, query))
        return _core.to_history(self.id, raw, floor)

    async def info(self) -> SessionInfo | None:
        """The session's version, size and times, or None if it does not exist."""
        return _core.to_info(await self.store._call(lambda: self._backend.info(self.id)))

    async def trim(self, *, keep_last: int) -> int:
        """Drop all but the last ``keep_last`` messages; return how many were dropped."""
        _core.check_count(keep_last, "keep_last")
        return await self.store._call(lambda: self._backend.trim(self.id, keep_last))

    async def delete(self) -> bool:
        """Delete the whole session; return whether it existed."""
        return await self.store._call(lambda: self._backend.delete(self.id))

    def __repr__(self) -> str:
        return f"<AsyncSession {self.id!r} of {self.store!r}>"
