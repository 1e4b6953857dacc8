"""The synchronous store: ``open_store(url)`` and its sessions."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from types import TracebackType
from typing import Any, TypeVar

from . import _core
from ._retry import call_with_retry
from .backends import Backend, build_backend
from .messages import Message
from .options import StoreOptions, split_options
from .results import Ack, History, SessionInfo
from .url import parse_url
from .validation import check_key

__all__ = ["Session", "Store", "open_store"]

T = TypeVar("T")


def open_store(url: str = "sqlite:///chatledger.db", **options: Any) -> Store:
    """Open the store at ``url``; see the README for URLs and options."""
    parsed = parse_url(url)
    common, extra = split_options(parsed.query, options)
    return Store(build_backend(parsed, common, extra))


class Store:
    """Sessions of one namespace in one backend. Thread-safe; a context manager."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self.options: StoreOptions = backend.options
        self.url = backend.url.redacted()

    @property
    def namespace(self) -> str:
        return self.options.namespace

    def session(self, session_id: str) -> Session:
        """A handle on one session; does no I/O."""
        return Session(self, check_key(session_id, "session id"))

    def sessions(self, prefix: str = "") -> Iterator[str]:
        """Ids of live sessions that start literally with ``prefix``, in pages."""
        check_key(prefix, "prefix", empty=True)
        cursor: str | None = None
        while True:
            page = self._call(partial(self._backend.list_sessions, prefix, cursor))
            yield from page.ids
            if page.cursor is None:
                return
            cursor = page.cursor

    def purge(self, prefix: str = "") -> int:
        """Delete every session whose id starts literally with ``prefix``."""
        check_key(prefix, "prefix", empty=True)
        return self._call(lambda: self._backend.purge(prefix))

    def close(self) -> None:
        self._backend.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Store {self.url} namespace={self.namespace!r}>"

    def _call(self, operation: Callable[[], T]) -> T:
        return call_with_retry(self.options, operation)


class Session:
    """One conversation's ledger. Cheap to create; holds no connection."""

    def __init__(self, store: Store, session_id: str) -> None:
        self.store = store
        self.id = session_id
        self._backend = store._backend

    def append(self, messages: Sequence[Message], *, expect_version: int | None = None) -> Ack:
        """Store ``messages`` as one atomic batch; safe to retry with the same ids."""
        batch = _core.make_batch(messages, expect_version, self.store.options.max_message_bytes)
        return self.store._call(lambda: self._backend.append(self.id, batch))

    def read(
        self,
        *,
        last: int | None = None,
        after: int | None = None,
        limit: int | None = None,
        min_version: int | None = None,
    ) -> History:
        """The ``last`` N messages, or those after seq ``after`` (at most ``limit``).

        With ``min_version``, raise MemoryLostError if the store holds less.
        """
        query = _core.make_query(last, after, limit)
        floor = _core.check_min_version(min_version)
        raw = self.store._call(lambda: self._backend.read(self.id, query))
        return _core.to_history(self.id, raw, floor)

    def info(self) -> SessionInfo | None:
        """The session's version, size and times, or None if it does not exist."""
        return _core.to_info(self.store._call(lambda: self._backend.info(self.id)))

    def trim(self, *, keep_last: int) -> int:
        """Drop all but the last ``keep_last`` messages; return how many were dropped."""
        _core.check_count(keep_last, "keep_last")
        return self.store._call(lambda: self._backend.trim(self.id, keep_last))

    def delete(self) -> bool:
        """Delete the whole session; return whether it existed."""
        return self.store._call(lambda: self._backend.delete(self.id))

    def __repr__(self) -> str:
        return f"<Session {self.id!r} of {self.store!r}>"
