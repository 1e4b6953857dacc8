"""What the store's helpers use of a store and of a session, as protocols.

The helpers (``context``, ``erasure``, ``rotation``, ``sealing``) sit below
:mod:`.store`, which calls them: they name the parts of ``AsyncStore`` and
``AsyncSession`` they use here, never the classes, so the store imports its
helpers and no helper imports the store. mypy checks that the classes fit.

:class:`AsyncRawAccess` is the other way in: what chatledger's own tools
(doctor, command line, inspector, LangGraph store, benchmarks) ask of a store's
backend past the store, through :func:`.store.raw_access` and
:func:`.store.call_raw`, never through its private attributes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from .._backends import AsyncBackend
from .._backends.contract import RawHistory, RawInfo, ReadQuery
from .._checks import Check
from .._events import Listener
from .._messages import Message
from .._options import StoreOptions
from .._results import Ack, History

__all__ = ["AsyncRawAccess", "SessionHandle", "StoreHandle"]

T = TypeVar("T")


class StoreHandle(Protocol):
    """The ``AsyncStore``, as its helpers use it."""

    @property
    def options(self) -> StoreOptions: ...

    @property
    def namespace(self) -> str: ...

    @property
    def _backend(self) -> AsyncBackend: ...

    @property
    def _telemetry(self) -> tuple[Listener, ...]: ...

    def sessions(self, prefix: str = "") -> AsyncIterator[str]: ...

    def _call(
        self, name: str, target: str, operation: Callable[[], Awaitable[T]],
        retry: Callable[[], Awaitable[T]] | None = None, sent: int = 0,
    ) -> Awaitable[T]: ...


class SessionHandle(Protocol):
    """The ``AsyncSession``, as its helpers use it."""

    @property
    def id(self) -> str: ...

    @property
    def store(self) -> StoreHandle: ...

    @property
    def _backend(self) -> AsyncBackend: ...

    @property
    def _ledger(self) -> str | None: ...

    @property
    def _version(self) -> int | None: ...

    def _seen(self, ledger: str | None, version: int | None) -> None: ...

    async def read(
        self, *, after: int | None = None, ledger: str | None = None,
        count_tokens: Any = None, with_summary: bool = False,
    ) -> History: ...

    async def append(
        self, messages: Sequence[Message], *, expect_version: int | None = None,
        ledger: str | None = None,
    ) -> Ack: ...


class AsyncRawAccess(Protocol):
    """A store's backend, as chatledger's own tools call it past the store.

    One attempt each, with no validation, retries or telemetry (unless run
    through :func:`.store.call_raw`); the backend contract says what each does.
    """

    async def info(self, session: str) -> RawInfo | None: ...

    async def read(self, session: str, query: ReadQuery) -> RawHistory: ...

    async def trim(self, session: str, keep_last: int, through_seq: int | None = None) -> int: ...

    async def namespaces(self) -> list[str] | None: ...

    async def checks(self) -> list[Check]: ...
