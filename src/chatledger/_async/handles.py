"""What the store's helpers use of a store and of a session, as protocols.

The helpers (``context``, ``erasure``, ``rotation``, ``sealing``) sit below
:mod:`.store`, which calls them: they name the parts of ``AsyncStore`` and
``AsyncSession`` they use here, never the classes, so the store imports its
helpers and no helper imports the store. mypy checks that the classes fit.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from .._backends import AsyncBackend
from .._events import Listener
from .._messages import Message
from .._options import StoreOptions
from .._results import Ack, History

__all__ = ["SessionHandle", "StoreHandle"]

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

    async def _call(
        self, name: str, target: str, operation: Callable[[], Awaitable[T]],
        retry: Callable[[], Awaitable[T]] | None = None, sent: int = 0,
    ) -> T: ...


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
