"""The operations built from a few small steps inside a transaction.

A backend with transactions (memory, SQLite, PostgreSQL) fills in the
steps below, each one statement or so, and gets every operation with the
ledger rules applied the same way: expired sessions are absent, and an
append does what :func:`~..contract.plan_append` says (its checks, in their
order, and the state it leaves). ``_transaction(write=...)`` must make the steps inside it one
atomic unit that sees one snapshot, and roll back on any error, so a failed
append never leaves half a batch. A backend may also write the common append
(plain growth) its own shorter way (``_grow``), the steps deciding the rest.
"""

from __future__ import annotations

import sys
from abc import abstractmethod
from bisect import bisect_left
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Generic, TypeVar

from ..._results import Ack
from ..contract import (
    EMPTY,
    PAGE,
    Batch,
    Head,
    HeadPage,
    RawHistory,
    RawInfo,
    ReadQuery,
    Reseal,
    SessionPage,
    StoredId,
    next_group,
    plan_append,
    trim_cut,
)
from .base import AsyncBackend

__all__ = ["AsyncTransactionalBackend", "page_of_heads"]

Tx = TypeVar("Tx")


class AsyncTransactionalBackend(AsyncBackend, Generic[Tx]):
    """The operations; subclasses fill in the steps (``tx`` is their transaction)."""

    supports_users = True

    # -- steps -------------------------------------------------------------

    @abstractmethod
    def _transaction(self, *, write: bool) -> AbstractAsyncContextManager[Tx]:
        """One atomic unit; ``write``: it will write (take the write lock up front)."""

    @abstractmethod
    async def _load(self, tx: Tx, session: str) -> RawInfo | None:
        """The session's stored state, expired or not; None when there is none."""

    @abstractmethod
    async def _save(self, tx: Tx, session: str, state: RawInfo, *, created: bool) -> None:
        """Store the session's state (insert it when ``created``)."""

    @abstractmethod
    async def _stored_ids(self, tx: Tx, session: str, ids: list[str]) -> dict[str, StoredId]:
        """Where each of ``ids`` that the session stores is."""

    @abstractmethod
    async def _insert(self, tx: Tx, session: str, first_seq: int, batch: Batch) -> None:
        """Store the batch's entries from ``first_seq`` on, and where each id went."""

    @abstractmethod
    async def _entries(
        self, tx: Tx, session: str, low: int, count: int | None,
    ) -> list[tuple[int, bytes]]:
        """Entries from seq ``low`` on, in order, at most ``count`` (None: all)."""

    @abstractmethod
    async def _cut(self, tx: Tx, session: str, below: int) -> None:
        """Remove the entries with a seq below ``below``."""

    @abstractmethod
    async def _drop(self, tx: Tx, session: str) -> None:
        """Remove the session whole: state, entries and ids."""

    @abstractmethod
    async def _page(
        self, tx: Tx, prefix: str, after: str | None, now: float, count: int,
    ) -> list[str]:
        """Up to ``count`` live ids starting with ``prefix``, above ``after``, in order."""

    async def _heads(
        self, tx: Tx, prefix: str, after: str | None, now: float, count: int,
    ) -> list[Head]:
        """The sessions ``_page`` lists, each with its newest entry (a backend with
        a query language overrides this with one query)."""
        return [await self._head(tx, session)
                for session in await self._page(tx, prefix, after, now, count)]

    async def _group_heads(
        self, tx: Tx, prefix: str, separator: str, low: str, *, now: float, count: int,
    ) -> list[Head]:
        """Up to ``count`` heads of the first live session of each group (``group_heads``)
        from id ``low`` on. This default lists every live id under ``prefix`` and
        skips from group to group by bisection: it reads only the heads it returns
        (a backend with a query language seeks in its index instead)."""
        ids = await self._page(tx, prefix, None, now, sys.maxsize)
        heads: list[Head] = []
        at = bisect_left(ids, low)
        while at < len(ids) and len(heads) < count:
            heads.append(await self._head(tx, ids[at]))
            at = bisect_left(ids, next_group(ids[at], prefix, separator), at + 1)
        return heads

    async def _head(self, tx: Tx, session: str) -> Head:
        """A session listed live in this transaction, with its newest entry."""
        state = await self._load(tx, session)
        assert state is not None  # listed in this transaction: live
        entries = (await self._entries(tx, session, state.version, 1)
                   if state.version >= state.first_seq else [])
        return session, RawHistory(entries, state.version, state.first_seq, state.ledger)

    @abstractmethod
    async def _namespaces(self, tx: Tx, now: float) -> list[str]:
        """Every namespace of the storage holding a live session, sorted."""

    @abstractmethod
    async def _purge(self, tx: Tx, prefix: str, now: float) -> int:
        """Remove every session starting with ``prefix``; return how many were live."""

    @abstractmethod
    async def _users_sessions(self, tx: Tx, user: str) -> list[str]:
        """Ids of every session stored with ``user`` (the state's), from an index."""

    @abstractmethod
    async def _reseal(self, tx: Tx, session: str, entries: list[Reseal]) -> int:
        """Replace each stored entry (seq, old, new) whose bytes are ``old``; count them."""

    async def _appended(self) -> None:
        """Called after an append committed: room for housekeeping."""

    async def _grow(self, tx: Tx, session: str, batch: Batch, *, now: float,
                    expires: float | None) -> Ack | None:
        """The common append in fewer statements than the steps, where a backend can.

        When the session is live, passes every check of :func:`plan_append`
        and stores none of the batch's ids, write the batch and the state the
        plan leaves, and return its Ack; otherwise write nothing and return
        None, and the steps decide (a retry, a refusal, a new session). This
        default always leaves it to the steps.
        """
        return None

    # -- operations ----------------------------------------------------------

    async def append(self, session: str, batch: Batch) -> Ack:
        async with self._transaction(write=True) as tx:
            now = self.options.clock()
            expires = self.options.expiry(now)
            ack = await self._grow(tx, session, batch, now=now, expires=expires)
            if ack is None:
                state = await self._live(tx, session, now, writing=True)
                found = await self._stored_ids(tx, session, batch.ids) if state else {}
                plan = plan_append(session, batch, state, found, now=now, expires=expires)
                if isinstance(plan, Ack):
                    return plan
                await self._insert(tx, session, plan.first_seq, batch)
                await self._save(tx, session, plan.state, created=plan.created)
                ack = plan.ack
        await self._appended()
        return ack

    async def read(self, session: str, query: ReadQuery) -> RawHistory:
        touch = self.options.touch_on_read and self.options.ttl is not None
        async with self._transaction(write=touch) as tx:
            now = self.options.clock()
            state = await self._live(tx, session, now, writing=touch)
            if state is None:
                return EMPTY
            if touch:
                touched = replace(state, expires_at=self.options.expiry(now))
                await self._save(tx, session, touched, created=False)
            low, count = query.window(state.version, state.first_seq)
            entries = await self._entries(tx, session, low, count)
            return RawHistory(entries, state.version, state.first_seq, state.ledger)

    async def info(self, session: str) -> RawInfo | None:
        async with self._transaction(write=False) as tx:
            return await self._live(tx, session, self.options.clock(), writing=False)

    async def trim(self, session: str, keep_last: int, through_seq: int | None = None) -> int:
        async with self._transaction(write=True) as tx:
            state = await self._live(tx, session, self.options.clock(), writing=True)
            if state is None:
                return 0
            cut = trim_cut(state.first_seq, state.version, keep_last, through_seq)
            if cut > state.first_seq:
                await self._cut(tx, session, cut)
                await self._save(tx, session, replace(state, first_seq=cut), created=False)
            return cut - state.first_seq

    async def delete(self, session: str) -> bool:
        async with self._transaction(write=True) as tx:
            state = await self._removable(tx, session)
            await self._drop(tx, session)
            return state is not None and not state.expired(self.options.clock())

    async def reseal(self, session: str, entries: list[Reseal]) -> int:
        async with self._transaction(write=True) as tx:
            state = await self._live(tx, session, self.options.clock(), writing=True)
            if state is None:
                return 0
            held = [e for e in entries if state.first_seq <= e[0] <= state.version]
            return await self._reseal(tx, session, held) if held else 0

    async def list_sessions(self, prefix: str, cursor: str | None) -> SessionPage:
        async with self._transaction(write=False) as tx:
            ids = await self._page(tx, prefix, cursor, self.options.clock(), PAGE + 1)
        page = ids[:PAGE]
        return SessionPage(page, page[-1] if len(ids) > PAGE else None)

    async def namespaces(self) -> list[str]:
        async with self._transaction(write=False) as tx:
            return await self._namespaces(tx, self.options.clock())
    async def heads(self, prefix: str, cursor: str | None) -> HeadPage:
        async with self._transaction(write=False) as tx:
            found = await self._heads(tx, prefix, cursor, self.options.clock(), PAGE + 1)
        return page_of_heads(found)

    async def group_heads(self, prefix: str, separator: str, cursor: str | None) -> HeadPage:
        low = prefix if cursor is None else next_group(cursor, prefix, separator)
        async with self._transaction(write=False) as tx:
            found = await self._group_heads(tx, prefix, separator, low,
                                            now=self.options.clock(), count=PAGE + 1)
        return page_of_heads(found)

    async def purge(self, prefix: str) -> int:
        async with self._transaction(write=True) as tx:
            return await self._purge(tx, prefix, self.options.clock())

    async def user_sessions(self, user: str) -> list[str]:
        async with self._transaction(write=False) as tx:
            return await self._users_sessions(tx, user)

    async def forget_session(self, user: str, session: str) -> bool:
        # The user is a column of the session's state: the index entry goes
        # with the session, in one transaction.
        async with self._transaction(write=True) as tx:
            state = await self._removable(tx, session)
            if state is None or state.user != user:
                return False  # gone, or written again by someone else since
            await self._drop(tx, session)
            return not state.expired(self.options.clock())

    async def _removable(self, tx: Tx, session: str) -> RawInfo | None:
        """The session's state as ``delete`` and ``forget_session`` read it: its expiry and
        user only. A backend whose ``_load`` refuses a damaged state reads it unchecked
        here, so that a damaged session can still be removed."""
        return await self._load(tx, session)

    # -- rules ---------------------------------------------------------------

    async def _live(self, tx: Tx, session: str, now: float, *, writing: bool) -> RawInfo | None:
        """The state of a live session.

        Writers remove an expired session first, so that a new session of the
        same id starts from nothing; readers merely do not see it.
        """
        state = await self._load(tx, session)
        if state is None or not state.expired(now):
            return state
        if writing:
            await self._drop(tx, session)
        return None


def page_of_heads(found: list[Head]) -> HeadPage:
    """A page of ``heads`` from up to ``PAGE + 1`` found: one more says there is more."""
    page = found[:PAGE]
    return HeadPage(page, page[-1][0] if len(found) > PAGE else None)
