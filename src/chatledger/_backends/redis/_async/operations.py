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
from ...contract import Batch, RawHistory, RawInfo, ReadQuery, Reseal
from ..calls import Calls, ScriptCall
from . import users

__all__ = ["AsyncScriptOperations"]

T = TypeVar("T")


class AsyncScriptOperations:
    """The backend operations that are one planned call (or the user index's few)."""

    calls: Calls

    @abstractmethod
    async def _run(self, call: ScriptCall[T]) -> T:
        """The call on the server that holds its keys."""

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
