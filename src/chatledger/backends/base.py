"""The storage contract every backend fills in.

A backend is a thin I/O shell: the store validates and encodes messages before
calling it and decodes what it returns, so a backend only moves bytes and keeps
the ten promises of DESIGN.md about *where* they go. Every method works on the
store's namespace (``self.options.namespace``) and must:

* be atomic: each call is one transaction, script or locked section;
* raise :class:`~chatledger.BackendUnavailable` (from the driver's exception)
  for anything a retry may fix, :class:`~chatledger.BackendError` otherwise;
* treat an expired session as absent everywhere.

Sync backends subclass :class:`Backend`; natively async ones subclass
:class:`AsyncBackend`. A backend that only has a sync form is served to async
callers from a worker thread by :class:`ThreadedAsyncBackend`.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import ConfigError
from ..options import StoreOptions
from ..results import Ack
from ..url import StoreURL

__all__ = [
    "AsyncBackend",
    "Backend",
    "Batch",
    "RawHistory",
    "RawInfo",
    "ReadQuery",
    "SessionPage",
    "ThreadedAsyncBackend",
    "reject_unknown_options",
]


@dataclass(frozen=True)
class Batch:
    """An encoded, validated append: ``blobs[i]`` is the message with ``ids[i]``."""

    ids: list[str]
    blobs: list[bytes]
    expect_version: int | None = None


@dataclass(frozen=True)
class ReadQuery:
    """Either the ``last`` N entries, or entries with seq > ``after``, at most ``limit``."""

    last: int | None = None
    after: int = 0
    limit: int | None = None

    def window(self, version: int, first_seq: int) -> tuple[int, int | None]:
        """The lowest seq to return and how many at most, given the session's state."""
        if self.last is not None:
            return max(first_seq, version - self.last + 1), self.last
        return max(first_seq, self.after + 1), self.limit


@dataclass(frozen=True)
class RawHistory:
    """Entries ``(seq, blob)`` in seq order, read at one consistent ``version``."""

    entries: list[tuple[int, bytes]]
    version: int
    first_seq: int


@dataclass(frozen=True)
class RawInfo:
    """A session's state; times are epoch seconds from the store's clock."""

    version: int
    first_seq: int
    created_at: float
    updated_at: float
    expires_at: float | None


@dataclass(frozen=True)
class SessionPage:
    """One page of session ids, and the cursor of the next page (None: done)."""

    ids: list[str]
    cursor: str | None


EMPTY = RawHistory(entries=[], version=0, first_seq=1)


def reject_unknown_options(url: StoreURL, extra: dict[str, Any], known: tuple[str, ...]) -> None:
    """Fail on an option this backend does not know: a typo must not pass silently."""
    unknown = sorted(set(extra) - set(known))
    if unknown:
        accepted = ", ".join(known) or "none besides the common ones"
        raise ConfigError(
            f"unknown option {unknown[0]!r} for {url.scheme}:// (backend options: {accepted})"
        )


class _Registered:
    """Backends list the URL schemes they serve; subclassing registers them."""

    schemes: ClassVar[tuple[str, ...]] = ()
    # (scheme, is_async) -> backend class
    registry: ClassVar[dict[tuple[str, bool], type[Any]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        is_async = any(base.__name__ == "AsyncBackend" for base in cls.__mro__)
        for scheme in cls.__dict__.get("schemes", ()):
            _Registered.registry[scheme, is_async] = cls

    def __init__(self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]) -> None:
        self.url = url
        self.options = options


class Backend(_Registered, ABC):
    """A synchronous backend."""

    @abstractmethod
    def append(self, session: str, batch: Batch) -> Ack:
        """Store the batch atomically after seq ``version``, or nothing.

        Order of checks: if every id is already stored, return the original
        Ack with ``deduplicated=True`` (see :func:`chatledger._core.dedupe`);
        then ``expect_version`` (``ConflictError``); then write entries, ids,
        version, updated time and expiry.
        """

    @abstractmethod
    def read(self, session: str, query: ReadQuery) -> RawHistory:
        """Return the window of ``query`` at one version; O(window), not O(history).

        The store checks ``min_version`` on the version this returns.
        """

    @abstractmethod
    def info(self, session: str) -> RawInfo | None:
        """The session's state, or None when it does not exist or expired."""

    @abstractmethod
    def trim(self, session: str, keep_last: int) -> int:
        """Drop all but the last ``keep_last`` entries; return how many were dropped.

        Never renumbers and never lowers the version; entries appended
        concurrently are above the cut and are kept.
        """

    @abstractmethod
    def delete(self, session: str) -> bool:
        """Remove the session whole; return whether it existed."""

    @abstractmethod
    def list_sessions(self, prefix: str, cursor: str | None) -> SessionPage:
        """One page of live session ids starting literally with ``prefix``."""

    @abstractmethod
    def purge(self, prefix: str) -> int:
        """Delete every session whose id starts literally with ``prefix``; return the count."""

    @abstractmethod
    def close(self) -> None:
        """Release connections; the store is unusable afterwards."""


class AsyncBackend(_Registered, ABC):
    """A natively asynchronous backend: the same contract as :class:`Backend`."""

    @abstractmethod
    async def append(self, session: str, batch: Batch) -> Ack: ...
    @abstractmethod
    async def read(self, session: str, query: ReadQuery) -> RawHistory: ...
    @abstractmethod
    async def info(self, session: str) -> RawInfo | None: ...
    @abstractmethod
    async def trim(self, session: str, keep_last: int) -> int: ...
    @abstractmethod
    async def delete(self, session: str) -> bool: ...
    @abstractmethod
    async def list_sessions(self, prefix: str, cursor: str | None) -> SessionPage: ...
    @abstractmethod
    async def purge(self, prefix: str) -> int: ...
    @abstractmethod
    async def close(self) -> None: ...


class ThreadedAsyncBackend(AsyncBackend):
    """Runs a sync backend's calls in worker threads, off the event loop."""

    def __init__(self, backend: Backend) -> None:
        super().__init__(backend.url, backend.options, {})
        self.backend = backend

    async def append(self, session: str, batch: Batch) -> Ack:
        return await asyncio.to_thread(self.backend.append, session, batch)

    async def read(self, session: str, query: ReadQuery) -> RawHistory:
        return await asyncio.to_thread(self.backend.read, session, query)

    async def info(self, session: str) -> RawInfo | None:
        return await asyncio.to_thread(self.backend.info, session)

    async def trim(self, session: str, keep_last: int) -> int:
        return await asyncio.to_thread(self.backend.trim, session, keep_last)

    async def delete(self, session: str) -> bool:
        return await asyncio.to_thread(self.backend.delete, session)

    async def list_sessions(self, prefix: str, cursor: str | None) -> SessionPage:
        return await asyncio.to_thread(self.backend.list_sessions, prefix, cursor)

    async def purge(self, prefix: str) -> int:
        return await asyncio.to_thread(self.backend.purge, prefix)

    async def close(self) -> None:
        await asyncio.to_thread(self.backend.close)
