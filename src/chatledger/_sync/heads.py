# Generated from src/chatledger/_async/heads.py by scripts/unasync.py: edit that file, not this one.
"""The newest entry of sessions: of every live one under a prefix, a page of
sessions a call, or of one.

Package-internal (LedgerStore's search reads this way, and list_namespaces
by group): the backend's ``heads`` reads a page of sessions with their newest
entries in a round trip or a few, where reading each session would cost one
per session; its ``group_heads`` reads the first of each group.
Each entry is decoded as a read decodes it, opened with the store's keyring
when it encrypts: an entry that does not decode or open raises, it is never
skipped.
"""

from __future__ import annotations

from collections.abc import Iterator, Callable
from functools import partial

from .._backends.contract import Head, HeadPage, ReadQuery
from .._core import to_history
from .._results import History
from .._validation import check_key
from .store import Store

__all__ = ["first_entries", "newest", "newest_entries", "opened"]

_NEWEST = ReadQuery(last=1)


def newest_entries(store: Store, prefix: str) -> Iterator[Head]:
    """Each live session starting literally with ``prefix``, with its newest entry as
    stored (:func:`opened` decodes it): a caller that can tell it needs no entry
    from the session id alone pays nothing to decode it."""
    check_key(prefix, "prefix", empty=True)
    backend = store._backend
    for head in _paged(store, "heads", prefix, lambda cursor: backend.heads(prefix, cursor)):
        yield head


def first_entries(store: Store, prefix: str, separator: str) -> Iterator[Head]:
    """The first live session of each group under ``prefix`` (the ids that share their
    text up to the first ``separator`` after it), with its newest entry as stored:
    a backend with an ordered index seeks from group to group, reading one head
    per group however many sessions each holds; another may list a group again
    on a later page (the backend's ``group_heads``)."""
    check_key(prefix, "prefix", empty=True)
    if len(separator) != 1 or not separator.isascii():
        raise ValueError(f"the separator must be one ASCII character, got {separator!r}")
    backend = store._backend
    for head in _paged(store, "group_heads", prefix,
                             lambda cursor: backend.group_heads(prefix, separator, cursor)):
        yield head


def _paged(store: Store, name: str, prefix: str,
                 page_at: Callable[[str | None], HeadPage]) -> Iterator[Head]:
    cursor: str | None = None
    while True:
        page = store._call(name, prefix, partial(page_at, cursor))
        for head in page.heads:
            yield head
        if page.cursor is None:
            return
        cursor = page.cursor


def opened(store: Store, head: Head) -> History:
    """The head's entry as a read returns it: a History of that one message (or of
    none when every entry was trimmed), opened with the store's keyring."""
    session, raw = head
    return to_history(session, raw, 0, None, store.options, query=_NEWEST)


def newest(store: Store, session: str) -> History:
    """One session's newest entry: ``session(id).read(last=1)`` without the
    handle (no ledger to remember, the query built once), for a caller that
    reads many sessions once each (``session`` checked by the caller)."""
    backend = store._backend

    def attempt() -> History:
        return opened(store, (session, backend.read(session, _NEWEST)))

    return store._call("read", session, attempt)
