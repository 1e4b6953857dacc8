"""The session operations both Redis backends serve the same way: one script call each.

The source of ``_sync/operations.py``. The standalone (and Sentinel) backend
and the cluster backend differ only in where a call goes, their ``_run``;
what each operation sends is written once here, and each backend mixes it in
beside its own connection handling (the cluster backend stays composed of
nodes, with no standalone constructor to bypass).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TypeVar

from ...._results import Ack
from ...contract import (
    Batch,
    HeadPage,
    RawHistory,
    RawInfo,
    ReadQuery,
    Reseal,
    SessionPage,
    groups_of,
)
from ..calls import Calls, ScriptCall, head_page
from . import users

__all__ = ["AsyncScriptOperations"]

T = TypeVar("T")


class AsyncScriptOperations:
    """The backend operations that are one planned call (or the user index's few)."""

    calls: Calls

    @abstractmethod
    async def _run(self, call: ScriptCall[T]) -> T:
        """The call on the server that holds its keys."""

    @abstractmethod
    async def _run_reads(self, calls: list[ScriptCall[T]]) -> list[T]:
        """Calls that write nothing, in as few round trips as the topology allows."""

    @abstractmethod
    async def list_sessions(self, prefix: str, cursor: str | None) -> SessionPage:
        """A page of SCAN's session ids under ``prefix``."""

    async def heads(self, prefix: str, cursor: str | None) -> HeadPage:
        page = await self.list_sessions(prefix, cursor)
        return head_page(page, await self._run_reads([self.calls.newest(s) for s in page.ids]))

    async def group_heads(self, prefix: str, separator: str, cursor: str | None) -> HeadPage:
        """SCAN's pages, as ``heads``', reading the newest entry of the first session of each
        group a page holds (no ordered index of ids to seek in: a group may come again)."""
        page = await self.list_sessions(prefix, cursor)
        groups = groups_of(page.ids, prefix, separator)
        found = head_page(SessionPage([group[0] for group in groups], page.cursor),
                          await self._run_reads([self.calls.newest(g[0]) for g in groups]))
        heads = dict(found.heads)
        for group in groups:
            if group[0] not in heads and len(group) > 1:  # deleted since the SCAN: the next
                rest = head_page(SessionPage(group[1:], None),
                                 await self._run_reads([self.calls.newest(s) for s in group[1:]]))
                heads.update(rest.heads[:1])
        return HeadPage(sorted(heads.items()), page.cursor)

    async def append(self, session: str, batch: Batch) -> Ack:
        if batch.user is None:
            return await self._run(self.calls.append(session, batch))
        return await users.indexed_append(self._run, self.calls, session, batch)

    async def read(self, session: str, query: ReadQuery) -> RawHistory:
        return await self._run(self.calls.read(session, query))

    async def info(self, session: str) -> RawInfo | None:
        return await self._run(self.calls.info(session))

    async def trim(self, session: str, keep_last: int, through_seq: int | None = None) -> int:
        return await self._run(self.calls.trim(session, keep_last, through_seq))

    async def delete(self, session: str) -> bool:
        return await self._run(self.calls.delete(session))

    async def user_sessions(self, user: str) -> list[str]:
        return await self._run(self.calls.index_members(user))

    async def forget_session(self, user: str, session: str) -> bool:
        return await users.forget_session(self._run, self.calls, user, session)

    async def reseal(self, session: str, entries: list[Reseal]) -> int:
        return await self._run(self.calls.reseal(session, entries))
