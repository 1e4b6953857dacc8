"""The newest entry of sessions: of every live one under a prefix, a page of
sessions a call, or of one.

Package-internal (LedgerStore's search and list_namespaces read this way): the
backend's ``heads`` reads a page of sessions with their newest entries in a
round trip or a few, where reading each session would cost one per session.
Each entry is decoded as a read decodes it, opened with the store's keyring
when it encrypts: an entry that does not decode or open raises, it is never
skipped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial

from .._backends.contract import Head, ReadQuery
from .._core import to_history
from .._results import History
from .._validation import check_key
from .store import AsyncStore

__all__ = ["newest", "newest_entries", "opened"]

_NEWEST = ReadQuery(last=1)


async def newest_entries(store: AsyncStore, prefix: str) -> AsyncIterator[Head]:
    """Each live session starting literally with ``prefix``, with its newest entry as
    stored (:func:`opened` decodes it): a caller that can tell it needs no entry
    from the session id alone pays nothing to decode it."""
    check_key(prefix, "prefix", empty=True)
    backend = store._backend
    cursor: str | None = None
    while True:
        page = await store._call("heads", prefix, partial(backend.heads, prefix, cursor))
        for head in page.heads:
            yield head
        if page.cursor is None:
            return
        cursor = page.cursor


def opened(store: AsyncStore, head: Head) -> History:
    """The head's entry as a read returns it: a History of that one message (or of
    none when every entry was trimmed), opened with the store's keyring."""
    session, raw = head
    return to_history(session, raw, 0, None, store.options)


async def newest(store: AsyncStore, session: str) -> History:
    """One session's newest entry: ``session(id).read(last=1)`` without the
    handle (no ledger to remember, the query built once), for a caller that
    reads many sessions once each (``session`` checked by the caller)."""
    backend = store._backend

    async def attempt() -> History:
        return opened(store, (session, await backend.read(session, _NEWEST)))

    return await store._call("read", session, attempt)
