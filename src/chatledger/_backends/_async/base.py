"""The storage contract every backend fills in.

A backend is a thin I/O shell: the store validates and encodes messages before
calling it and decodes what it returns, so a backend only moves bytes and keeps
the promises of the documentation (``docs/concepts.md``) about *where* they go,
applying the ledger rules of
:mod:`chatledger._backends.contract`. Every method works on the store's
namespace (``self.options.namespace``) and must:

* be atomic: each call is one transaction, script or locked section;
* raise :class:`~chatledger.BackendUnavailable` (from the driver's exception)
  for anything a retry may fix, :class:`~chatledger.BackendError` otherwise;
* treat an expired session as absent everywhere.

The constructor only checks the URL and options: the first I/O (a file to
check, a schema to create) belongs in :meth:`AsyncBackend.open`, which the
store runs with its retries and, for an async caller, off the event loop.

Backends written for asyncio subclass :class:`AsyncBackend`; the sync
:class:`~chatledger._backends._sync.base.Backend` is generated from this module.
A backend with only a sync driver is served to async callers by
:class:`~chatledger._backends.threaded.ThreadedAsyncBackend`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from ..._checks import Check
from ..._errors import ConfigError
from ..._results import Ack
from ..contract import (
    Batch,
    HeadPage,
    RawHistory,
    RawInfo,
    ReadQuery,
    Reseal,
    SessionPage,
    first_of_groups,
)
from ..registry import Registered

__all__ = ["AsyncBackend"]


class AsyncBackend(Registered, ABC):
    """A backend: the operations below, ``open``/``close``, and two extras for doctor and the tests.

    Eight operations every backend fills in (``append``, ``read``, ``info``,
    ``trim``, ``delete``, ``list_sessions``, ``purge``, ``reseal``). A backend
    that keeps a user index (``supports_users``) also tags a new session with
    ``Batch.user`` and fills in the other two, :meth:`user_sessions` and
    :meth:`forget_session`; the store refuses ``user=`` on any other.
    ``heads`` reads many sessions' newest entries at once; ``group_heads``
    has a default built on it, which a backend with an ordered index of
    session ids replaces with a seek from one group to the next.
    """

    supports_users: bool = False

    async def open(self) -> None:  # most backends connect lazily: nothing to do
        """Do what opening needs before the first call; retried like any call.

        Raise BackendUnavailable for what a retry may fix (a file locked by
        its first opener), ConfigError or BackendError otherwise.
        """

    @abstractmethod
    async def append(self, session: str, batch: Batch) -> Ack:
        """Store the batch atomically after seq ``version``, or nothing.

        Order of checks: the batch's ``ledger`` when ``strict``
        (:func:`~..contract.check_ledger`); if every id is already stored, the
        original Ack with ``deduplicated=True`` (:func:`~..contract.dedupe`);
        the batch's ``ledger`` when not ``strict``; then ``expect_version``
        (ConflictError); then write entries, ids, version, updated time and
        expiry. A new ledger gets a new ledger id.
        """

    @abstractmethod
    async def read(self, session: str, query: ReadQuery) -> RawHistory:
        """Return the window of ``query`` at one version; O(window), not O(history).

        The store checks ``min_version`` and ``ledger`` on what this returns.
        """

    @abstractmethod
    async def info(self, session: str) -> RawInfo | None:
        """The session's state, or None when it does not exist or expired."""

    @abstractmethod
    async def trim(self, session: str, keep_last: int, through_seq: int | None = None) -> int:
        """Drop all but the last ``keep_last`` entries; return how many were dropped.

        With ``through_seq``, never past it: entries above ``through_seq`` are
        kept, however many were appended since the caller looked (what a
        summary covers is dropped, never what it does not). Never renumbers
        and never lowers the version; entries appended concurrently are above
        the cut and are kept.
        """

    @abstractmethod
    async def delete(self, session: str) -> bool:
        """Remove the session whole; return whether it existed."""

    @abstractmethod
    async def list_sessions(self, prefix: str, cursor: str | None) -> SessionPage:
        """One page of live session ids starting literally with ``prefix``."""

    @abstractmethod
    async def heads(self, prefix: str, cursor: str | None) -> HeadPage:
        """One page of live sessions starting literally with ``prefix``, each with its
        newest entry, in id order (``list_sessions``'s pages and cursors).

        Each session's history is read at one version: the entry at seq
        ``version``, with the session's version, first seq and ledger; no entry
        when every one was trimmed. A page costs a round trip or a few, never
        one per session: this is how a caller reads the newest state of many
        sessions at once (LangGraph's store searches this way). Never touches
        the sessions' expiry (``touch_on_read`` is for reads of one session).
        """

    async def group_heads(self, prefix: str, separator: str, cursor: str | None) -> HeadPage:
        """One page of heads as :meth:`heads`'s, of the first live session of each group
        under ``prefix``: a group is the sessions whose ids share their text up to
        and including the first ``separator`` after ``prefix`` (an id with none
        there is a group of its own; :func:`~..contract.next_group`).

        A backend with an ordered index of session ids lists each group once, in
        id order, seeking from one group to the next: a page costs what its heads
        cost, however many sessions each group holds. This default lists every
        session (``heads``' pages) and keeps the first of each group a page
        holds: a group may come again on a later page. ``separator`` is one
        ASCII character.
        """
        page = await self.heads(prefix, cursor)
        kept = set(first_of_groups([session for session, _ in page.heads], prefix, separator))
        return HeadPage([head for head in page.heads if head[0] in kept], page.cursor)

    @abstractmethod
    async def purge(self, prefix: str) -> int:
        """Delete every session whose id starts literally with ``prefix``; return the count."""

    async def user_sessions(self, user: str) -> list[str]:
        """Every session id the user index holds for ``user``, expired ones too.

        From the index alone, never a scan of the namespace. May name sessions
        that are gone (an index entry outlives its session until
        :meth:`forget_session` removes it).
        """
        raise ConfigError(f"{self.url.redacted()} keeps no user index")

    async def forget_session(self, user: str, session: str) -> bool:
        """Delete ``session`` if it is tagged with ``user``, then its index entry.

        The session goes atomically, and its index entry only after it, so an
        erasure cut short is finished by running it again. Returns whether a
        live session of ``user`` was deleted.
        """
        raise ConfigError(f"{self.url.redacted()} keeps no user index")

    @abstractmethod
    async def reseal(self, session: str, entries: list[Reseal]) -> int:
        """Replace each entry ``(seq, old, new)`` still stored as ``old`` with ``new``, atomically.

        For key rotation: the entry keeps its seq, and the session its version,
        ids, times and expiry. An entry trimmed, or no longer ``old`` (the
        session was deleted and written again), is left alone; an absent or
        expired session changes nothing. Return how many were replaced.
        """

    async def namespaces(self) -> list[str] | None:
        """The namespaces of this storage that hold a live session, sorted.

        None when the backend cannot tell without reading every key (Redis,
        DynamoDB). ``chatledger sessions`` names them when a namespace is empty.
        """
        return None

    @abstractmethod
    async def close(self) -> None:
        """Release connections; the store is unusable afterwards."""

    @abstractmethod
    async def checks(self) -> list[Check]:
        """What the storage says about the safety of the sessions it holds (doctor).

        Never raises for what it finds: an unreachable server is a ``fail`` check.
        """

    @abstractmethod
    async def corrupt_entry(self, session: str, seq: int, blob: bytes) -> None:
        """For tests: overwrite the stored entry ``seq`` with ``blob``, behind the store."""
