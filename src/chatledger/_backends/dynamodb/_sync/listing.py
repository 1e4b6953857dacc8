# Generated from src/chatledger/_backends/dynamodb/_async/listing.py by scripts/unasync.py: edit that file, not this one.
"""Listing a namespace's sessions: pages of the sparse ``sessions`` index (no Scan),
and ``heads``: a page with each session's newest entry, by ``BatchGetItem``."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...contract import Head, HeadPage, RawHistory, ReadQuery, SessionPage, next_group
from .. import layout
from ..layout import INDEX, META, TTL_ATTRIBUTE, entry_key, meta_from_item, partition
from .reads import Reads

__all__ = ["Listing"]

_NEWEST = ReadQuery(last=1)


class Listing(Reads):
    """``list_sessions``, ``heads`` and ``group_heads``."""

    def list_sessions(self, prefix: str, cursor: str | None) -> SessionPage:
        size = layout.PAGE  # read here: the tests shrink it
        listed = self._index(prefix, cursor, size + 1)
        ids = [sid for sid, exp in listed if exp is None or exp > self.options.clock()]
        page = ids[:size]
        return SessionPage(page, page[-1] if len(ids) > size else None)

    def heads(self, prefix: str, cursor: str | None) -> HeadPage:
        """A page of the index, then its sessions' meta items and the entries they
        name, by ``BatchGetItem`` (100 a request). A session whose entry is split
        in parts, or changed between the two reads, is read on its own."""
        return self._heads_of(self.list_sessions(prefix, cursor))

    def group_heads(self, prefix: str, separator: str, cursor: str | None) -> HeadPage:
        """A Query of the index per group, seeking where the group before ends (one item
        read of it, more where sessions expired), then the heads as ``heads`` reads them."""
        size = layout.PAGE  # read here: the tests shrink it
        low = prefix if cursor is None else next_group(cursor, prefix, separator)
        ids: list[str] = []
        now = self.options.clock()
        while len(ids) <= size:
            live = [sid for sid, exp in self._index(prefix, None, 1, low=low)
                    if exp is None or exp > now]
            if not live:
                break
            ids.append(live[0])
            low = next_group(live[0], prefix, separator)
        page = ids[:size]
        found = self._heads_of(SessionPage(page, page[-1] if len(ids) > size else None))
        if len(found.heads) == len(page):
            return found
        heads = dict(found.heads)
        firsts = [self._first_found(session, heads, prefix, separator) for session in page]
        return HeadPage([head for head in firsts if head is not None], found.cursor)

    def _first_found(self, session: str, heads: dict[str, RawHistory], prefix: str,
                           separator: str) -> Head | None:
        """The head of ``session``'s group: its own, or, when it was deleted after the
        index listed it, that of the next live session of its group (None: none left)."""
        end = next_group(session, prefix, separator)
        while session not in heads:
            now = self.options.clock()
            after = [sid for sid, exp in self._index(prefix, None, 1, low=session + "\x01")
                     if exp is None or exp > now]
            if not after or after[0] >= end:
                return None
            session = after[0]
            heads.update((self._heads_of(SessionPage([session], None))).heads)
        return session, heads[session]

    def _heads_of(self, page: SessionPage) -> HeadPage:
        """The heads of a page of sessions: their meta items and the entries they name."""
        now = self.options.clock()
        metas = _by_key(self._batch_get([self.items.key(s, META) for s in page.ids]))
        states = {}
        for session in page.ids:
            item = metas.get((partition(self.options.namespace, session), META))
            state = self._live(None if item is None else meta_from_item(item), now)
            if state is not None:
                states[session] = state
        entries = _by_key(self._batch_get([
            self.items.key(session, entry_key(state.version))
            for session, state in states.items() if state.version >= state.first_seq]))
        heads = []
        for session, state in states.items():
            raw = RawHistory([], state.version, state.first_seq, state.ledger)
            if state.version >= state.first_seq:
                item = entries.get((partition(self.options.namespace, session),
                                    entry_key(state.version)))
                if item is None or "parts" in item or item["ledger"]["S"] != state.ledger:
                    raw = self._read(session, _NEWEST, touch=False)
                else:
                    raw = replace(raw, entries=[(state.version, bytes(item["b"]["B"]))])
            if raw.version:
                heads.append((session, raw))
        return HeadPage(heads, page.cursor)

    def _index(self, prefix: str, after: str | None, count: int | None, *,
                     low: str | None = None) -> list[tuple[str, float | None]]:
        """Sessions in id order from the ``sessions`` index: (id, expiry); ``count`` live ones
        at least, when there are that many. ``low``: the least id to list (else after
        ``after``)."""
        if low is None:
            low = max(prefix, after + "\x00") if after is not None else prefix
        request: dict[str, Any] = {
            "TableName": self.table, "IndexName": INDEX,
            "KeyConditionExpression": "ns = :ns" + (" AND sid >= :low" if low else ""),
            "ExpressionAttributeValues": {":ns": {"S": self.options.namespace},
                                          **({":low": {"S": low}} if low else {})}}
        found: list[tuple[str, float | None]] = []
        now = self.options.clock()
        while True:
            if count is not None:
                request["Limit"] = count
            reply = self._call("query", **request)
            for item in reply.get("Items", []):
                sid = item["sid"]["S"]
                if not sid.startswith(prefix):
                    return found
                exp = item.get(TTL_ATTRIBUTE)
                found.append((sid, None if exp is None else float(exp["N"])))
            live = sum(1 for _, exp in found if exp is None or exp > now)
            start = reply.get("LastEvaluatedKey")
            if start is None or (count is not None and live >= count):
                return found
            request["ExclusiveStartKey"] = start


def _by_key(items: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Items by their (partition key, sort key)."""
    return {(item["pk"]["S"], item["sk"]["S"]): item for item in items}
