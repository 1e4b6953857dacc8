# Generated from src/chatledger/_backends/dynamodb/_async/reads.py by scripts/unasync.py: edit that file, not this one.
"""Reads: one ``Query`` of the window's entries and the meta item together.

The meta item's sort key sorts right after every entry's (``layout.py``), so a
query of the range from the window's first entry up to the meta item, newest
first for ``last=`` and oldest first for ``after=``, holds both the state and
the entries, ``Limit`` capped at the window plus the meta item (and at 1,000 a
page). Only an ``after=`` page that ends before the newest entry misses the meta
item, read then with a ``GetItem``. The entries are checked against the state
they came with (every seq of the window, in the state's ledger); a window that
changed meanwhile (an append, trim or delete racing the read) is read again."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...._errors import BackendUnavailable
from ...contract import EMPTY, RawHistory, RawInfo, ReadQuery
from ..layout import META, TTL_ATTRIBUTE, Meta, entry_key, meta_from_item, number, part_key, seq_of
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
            meta, items = self._window_and_meta(session, query)
            state = self._live(meta, now)
            if state is None:
                return EMPTY
            if touch and self.options.ttl is not None:
                state = self._touch(session, state, now)
                if state is None:
                    continue
            low, count = query.window(state.version, state.first_seq)
            high = state.version if count is None else min(state.version, low + count - 1)
            entries = self._entries_of(session, state.ledger, items, low, high)
            if entries is not None:
                return RawHistory(entries, state.version, state.first_seq, state.ledger)
        raise BackendUnavailable(f"dynamodb {self._where}: session {session!r} changed during "
                                 f"{_REREADS} reads in a row")

    def _window_and_meta(self, session: str, query: ReadQuery
                               ) -> tuple[Meta | None, list[dict[str, Any]]]:
        """The meta item and the entry items of the query's range, in one ``Query``
        when the range reaches the meta item (a ``GetItem`` more when it does not)."""
        last = query.last is not None
        if last:
            wanted, low = query.last, 1
        else:
            wanted, low = query.limit, query.after + 1
        items = self._query(
            session, "sk BETWEEN :low AND :meta",
            {":low": {"S": entry_key(max(1, low))}, ":meta": {"S": META}},
            limit=None if wanted is None else wanted + 1, newest_first=last)
        metas = [item for item in items if item["sk"]["S"] == META]
        entries = [item for item in items if item["sk"]["S"] != META]
        if metas:
            return meta_from_item(metas[0]), entries
        if last or wanted is None or len(items) <= wanted:  # the range reached where it is
            return None, entries
        return self._meta(session), entries  # a full page before the newest entry

    def _entries_of(self, session: str, ledger: str, items: list[dict[str, Any]],
                          low: int, high: int) -> list[tuple[int, bytes]] | None:
        """Entries ``low..high`` of ``ledger`` from ``items``; None when some are
        missing or of another ledger (read again)."""
        if high < low:
            return []
        held = sorted((item for item in items if low <= seq_of(item["sk"]["S"]) <= high),
                      key=lambda item: item["sk"]["S"])
        seqs = [seq_of(item["sk"]["S"]) for item in held]
        if seqs != list(range(low, high + 1)) or any(
                item["ledger"]["S"] != ledger for item in held):
            return None
        blobs = self._joined(session, held)
        return None if blobs is None else list(zip(seqs, blobs, strict=True))

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
