"""The meta items a backend remembers, so that an append tries one request, not two; no I/O.

An append starts from the session's meta item as this backend last wrote or
saw it; the transaction's conditions make a stale guess fail, and the failure
returns the item as it is. Bounded: the oldest session is forgotten first.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..._bounded import keep_within
from .conditions import UNREAD, Seen
from .layout import Meta

__all__ = ["REMEMBERED", "KnownMetas"]

REMEMBERED = 4096  # sessions whose meta item a backend remembers


class KnownMetas:
    """Session -> its meta item (or None: there is none) as last seen."""

    def __init__(self) -> None:
        self._metas: dict[str, Meta | None] = {}

    def __iter__(self) -> Iterator[str]:
        return iter(self._metas)

    def get(self, session: str) -> Seen:
        return self._metas.get(session, UNREAD)

    def remember(self, session: str, meta: Seen) -> None:
        self._metas.pop(session, None)
        if meta is not UNREAD:
            self._metas[session] = meta
            keep_within(self._metas, REMEMBERED)

    def forget(self, session: str) -> None:
        self._metas.pop(session, None)

    def clear(self) -> None:
        self._metas.clear()
