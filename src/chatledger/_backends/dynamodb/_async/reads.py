"""Reads: the meta item, then one ``Query`` of exactly the window's sort keys
(``Limit`` capped at the window and at 1,000 a page); a window that changed in
between (a concurrent trim or delete) is read again."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...._errors import BackendUnavailable
from ...contract import EMPTY, RawHistory, RawInfo, ReadQuery
from ..layout import META, TTL_ATTRIBUTE, entry_key, number, part_key, seq_of
from .table import AsyncTable

__all__ = ["AsyncReads"]

_REREADS = 5


class AsyncReads(AsyncTable):
    """A session's state and a window of its entries."""

    async def read(self, session: str, query: ReadQuery) -> RawHistory:
        return await self._read(session, query, touch=self.options.touch_on_read)

    async def info(self, session: str) -> RawInfo | None:
        return self._live(await self._meta(session), self.options.clock())

    async def _read(self, session: str, query: ReadQuery, *, touch: bool) -> RawHistory:
        seen_gap: tuple[Any, ...] | None = None
        for _ in range(_REREADS):
            now = self.options.clock()
            state = self._live(await self._meta(session), now)
            if state is None:
                return EMPTY
            if touch and self.options.ttl is not None:
                state = await self._touch(session, state, now)
                if state is None:
                    continue
            low, count = query.window(state.version, state.first_seq)
            high = state.version if count is None else min(state.version, low + count - 1)
            entries, whole = await self._window(session, state.ledger, low, high)
            # A gap is a concurrent trim or delete (the meta moves), a reseal (an
            # entry's parts rewritten under a new token; the meta stays), or an
            # entry lost under the store (deleted by hand): the same gap read twice
            # at the same meta is the last, and the store names its seq
            # (CorruptEntryError); reads around it still answer.
            gap = (state.ledger, state.version, state.first_seq, tuple(s for s, _ in entries))
            if whole or gap == seen_gap:
                return RawHistory(entries, state.version, state.first_seq, state.ledger)
            seen_gap = gap
        raise BackendUnavailable(f"dynamodb {self._where}: session {session!r} changed during "
                                 f"{_REREADS} reads in a row")

    async def _touch(self, session: str, state: RawInfo, now: float) -> RawInfo | None:
        """The state with its expiry pushed back; None when the session changed since."""
        expires = self.options.expiry(now)
        refusal = await self._transact([{"Update": {
            "TableName": self.table, "Key": self.items.key(session, META),
            "UpdateExpression": f"SET {TTL_ATTRIBUTE} = :exp",
            "ConditionExpression": "ledger = :ledger AND ver = :v",
            "ExpressionAttributeValues": {":exp": number(expires or 0),
                                          ":ledger": {"S": state.ledger},
                                          ":v": number(state.version)}}}])
        return None if refusal is not None else replace(state, expires_at=expires)

    async def _window(self, session: str, ledger: str, low: int,
                      high: int) -> tuple[list[tuple[int, bytes]], bool]:
        """Entries ``low..high`` of ``ledger`` found whole, and whether none is missing
        (an entry, or a part of one): a concurrent trim or delete, or a loss."""
        if high < low:
            return [], True
        items = await self._query(session, "sk BETWEEN :low AND :high",
                                  {":low": {"S": entry_key(low)}, ":high": {"S": entry_key(high)}},
                                  limit=high - low + 1)
        items = [item for item in items if item["ledger"]["S"] == ledger]
        entries = await self._joined(session, items)
        return entries, [seq for seq, _ in entries] == list(range(low, high + 1))

    async def _joined(self, session: str,
                      items: list[dict[str, Any]]) -> list[tuple[int, bytes]]:
        """Each entry's seq and bytes, its parts appended; one lacking a part is left out."""
        wanted = [part_key(item["tok"]["S"], seq_of(item["sk"]["S"]), k)
                  for item in items if "parts" in item
                  for k in range(1, int(item["parts"]["N"]) + 1)]
        parts = {part["sk"]["S"]: bytes(part["b"]["B"])
                 for part in await self._get_many(session, wanted)} if wanted else {}
        entries = []
        for item in items:
            seq = seq_of(item["sk"]["S"])
            keys = [part_key(item["tok"]["S"], seq, k)
                    for k in range(1, int(item.get("parts", {"N": "0"})["N"]) + 1)]
            if all(key in parts for key in keys):
                entries.append((seq, b"".join([bytes(item["b"]["B"]),
                                               *(parts[key] for key in keys)])))
        return entries
