# Generated from src/chatledger/_backends/dynamodb/_async/reads.py by scripts/unasync.py: edit that file, not this one.
"""Reads: the meta item, then one ``Query`` of exactly the window's sort keys
(``Limit`` capped at the window and at 1,000 a page); a window that changed in
between (a concurrent trim or delete) is read again."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...._errors import BackendUnavailable
from ...contract import EMPTY, RawHistory, RawInfo, ReadQuery
from ..layout import META, TTL_ATTRIBUTE, entry_key, number, part_key, seq_of
from .table import Table

__all__ = ["Reads"]

_REREADS = 5


class Reads(Table):
    """A session's state and a window of its entries."""

    def read(self, session: str, query: ReadQuery) -> RawHistory:
        return self._read(session, query, touch=self.options.touch_on_read)

    def info(self, session: str) -> RawInfo | None:
        return self._live(self._meta(session), self.options.clock())

    def _read(self, session: str, query: ReadQuery, *, touch: bool) -> RawHistory:
        for _ in range(_REREADS):
            now = self.options.clock()
            state = self._live(self._meta(session), now)
            if state is None:
                return EMPTY
            if touch and self.options.ttl is not None:
                state = self._touch(session, state, now)
                if state is None:
                    continue
            low, count = query.window(state.version, state.first_seq)
            high = state.version if count is None else min(state.version, low + count - 1)
            entries = self._window(session, state.ledger, low, high)
            if entries is not None:
                return RawHistory(entries, state.version, state.first_seq, state.ledger)
        raise BackendUnavailable(f"dynamodb {self._where}: session {session!r} changed during "
                                 f"{_REREADS} reads in a row")

    def _touch(self, session: str, state: RawInfo, now: float) -> RawInfo | None:
        """The state with its expiry pushed back; None when the session changed since."""
        expires = self.options.expiry(now)
        refusal = self._transact([{"Update": {
            "TableName": self.table, "Key": self.items.key(session, META),
            "UpdateExpression": f"SET {TTL_ATTRIBUTE} = :exp",
            "ConditionExpression": "ledger = :ledger AND ver = :v",
            "ExpressionAttributeValues": {":exp": number(expires or 0),
                                          ":ledger": {"S": state.ledger},
                                          ":v": number(state.version)}}}])
        return None if refusal is not None else replace(state, expires_at=expires)

    def _window(self, session: str, ledger: str, low: int,
                      high: int) -> list[tuple[int, bytes]] | None:
        """Entries ``low..high`` of ``ledger``; None when some are missing (read again)."""
        if high < low:
            return []
        items = self._query(session, "sk BETWEEN :low AND :high",
                                  {":low": {"S": entry_key(low)}, ":high": {"S": entry_key(high)}},
                                  limit=high - low + 1)
        seqs = [seq_of(item["sk"]["S"]) for item in items]
        if seqs != list(range(low, high + 1)) or any(
                item["ledger"]["S"] != ledger for item in items):
            return None
        blobs = self._joined(session, items)
        return None if blobs is None else list(zip(seqs, blobs, strict=True))

    def _joined(self, session: str, items: list[dict[str, Any]]) -> list[bytes] | None:
        """Each entry's bytes, its parts appended; None when a part is missing."""
        wanted = [part_key(item["tok"]["S"], seq_of(item["sk"]["S"]), k)
                  for item in items if "parts" in item
                  for k in range(1, int(item["parts"]["N"]) + 1)]
        parts = {part["sk"]["S"]: bytes(part["b"]["B"])
                 for part in self._get_many(session, wanted)} if wanted else {}
        if len(parts) < len(wanted):
            return None
        blobs = []
        for item in items:
            blob = bytes(item["b"]["B"])
            for k in range(1, int(item.get("parts", {"N": "0"})["N"]) + 1):
                blob += parts[part_key(item["tok"]["S"], seq_of(item["sk"]["S"]), k)]
            blobs.append(blob)
        return blobs
