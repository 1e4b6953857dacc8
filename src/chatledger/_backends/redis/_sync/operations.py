# Generated from src/chatledger/_backends/redis/_async/operations.py by scripts/unasync.py: edit that file, not this one.
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

__all__ = ["ScriptOperations"]

T = TypeVar("T")


class ScriptOperations:
    """The backend operations that are one planned call (or the user index's few)."""

    calls: Calls

    @abstractmethod
    def _run(self, call: ScriptCall[T]) -> T:
        """The call on the server that holds its keys."""

    @abstractmethod
    def _run_reads(self, calls: list[ScriptCall[T]]) -> list[T]:
        """Calls that write nothing, in as few round trips as the topology allows."""

    @abstractmethod
    def list_sessions(self, prefix: str, cursor: str | None) -> SessionPage:
        """A page of SCAN's session ids under ``prefix``."""

    def heads(self, prefix: str, cursor: str | None) -> HeadPage:
        page = self.list_sessions(prefix, cursor)
        return head_page(page, self._run_reads([self.calls.newest(s) for s in page.ids]))

    def group_heads(self, prefix: str, separator: str, cursor: str | None) -> HeadPage:
        """SCAN's pages, as ``heads``', reading the newest entry of the first session of each
        group a page holds (no ordered index of ids to seek in: a group may come again)."""
        page = self.list_sessions(prefix, cursor)
        groups = groups_of(page.ids, prefix, separator)
        found = head_page(SessionPage([group[0] for group in groups], page.cursor),
                          self._run_reads([self.calls.newest(g[0]) for g in groups]))
        heads = dict(found.heads)
        for group in groups:
            if group[0] not in heads and len(group) > 1:  # deleted since the SCAN: the next
                rest = head_page(SessionPage(group[1:], None),
                                 self._run_reads([self.calls.newest(s) for s in group[1:]]))
                heads.update(rest.heads[:1])
        return HeadPage(sorted(heads.items()), page.cursor)

    def append(self, session: str, batch: Batch) -> Ack:
        if batch.user is None:
            return self._run(self.calls.append(session, batch))
        return users.indexed_append(self._run, self.calls, session, batch)

    def read(self, session: str, query: ReadQuery) -> RawHistory:
        return self._run(self.calls.read(session, query))

    def info(self, session: str) -> RawInfo | None:
        return self._run(self.calls.info(session))

    def trim(self, session: str, keep_last: int, through_seq: int | None = None) -> int:
        return self._run(self.calls.trim(session, keep_last, through_seq))

    def delete(self, session: str) -> bool:
        return self._run(self.calls.delete(session))

    def user_sessions(self, user: str) -> list[str]:
        return self._run(self.calls.index_members(user))

    def forget_session(self, user: str, session: str) -> bool:
        return users.forget_session(self._run, self.calls, user, session)

    def reseal(self, session: str, entries: list[Reseal]) -> int:
        return self._run(self.calls.reseal(session, entries))
