"""Deleting a session, and forgetting a user's sessions through the user index.

A delete is one Query of the partition, then one transaction that deletes the
meta item (on the condition that its ledger is the one read) and up to 99 of
the ledger's items with it, then a second Query for the rest. A tagged
session's index item stays after a delete: it names a session that is gone,
which ``forget_session`` tells apart (and it finds what a delete cut short left).
"""

from __future__ import annotations

from typing import Any

from .. import races
from ..layout import META, USER, Meta, meta_from_item, user_partition
from ..transactions import TX_ITEMS
from .table import AsyncTable

__all__ = ["AsyncErasure"]


class AsyncErasure(AsyncTable):
    """``delete``, ``user_sessions`` and ``forget_session``."""

    async def delete(self, session: str) -> bool:
        self._known.forget(session)
        for _ in range(races.RACES):
            found = await self._partition(session)
            meta_item = _meta_item(found)
            if meta_item is None:
                return False
            live = await self._drop(session, found, meta_from_item(meta_item))
            if live is not None:
                return live
        raise races.kept_changing(self._where, session)

    async def user_sessions(self, user: str) -> list[str]:
        """One Query of the user's partition (pages of 1 MB): no Scan."""
        request: dict[str, Any] = {
            "TableName": self.table, "ConsistentRead": True,
            "KeyConditionExpression": "pk = :pk", "ProjectionExpression": "sk",
            "ExpressionAttributeValues": {
                ":pk": {"S": user_partition(self.options.namespace, user)}}}
        sessions: list[str] = []
        while True:
            reply = await self._call("query", **request)
            sessions += [item["sk"]["S"] for item in reply.get("Items", [])]
            start = reply.get("LastEvaluatedKey")
            if start is None:
                return sessions
            request["ExclusiveStartKey"] = start

    async def forget_session(self, user: str, session: str) -> bool:
        """Delete the session if it is ``user``'s; else what is left in its partition of
        older ledgers (a cut-short delete's, or the user's expired session's under another
        one written over it since, by another user or untagged); then its index item: on
        the condition that no session of the user was created there since (a writer's new
        session keeps its index item, for the next round)."""
        self._known.forget(session)
        live = await self._forget_partition(user, session)
        # Refused when a new session of the user's is there: it stays indexed.
        await self._transact([
            {"ConditionCheck": {
                "TableName": self.table, "Key": self.items.key(session, META),
                "ConditionExpression": "attribute_not_exists(pk) OR "
                                       "attribute_not_exists(#user) OR #user <> :user",
                "ExpressionAttributeNames": {"#user": USER},
                "ExpressionAttributeValues": {":user": {"S": user}}}},
            {"Delete": {"TableName": self.table, "Key": self.items.user_key(user, session)}}])
        return live

    async def _forget_partition(self, user: str, session: str) -> bool:
        """Drop the session if it is ``user``'s, else its older ledgers' items; whether a
        live session was dropped."""
        for _ in range(races.RACES):
            found = await self._partition(session)
            meta_item = _meta_item(found)
            if meta_item is None or meta_item.get(USER, {}).get("S") != user:
                # gone (what a delete cut short left), or another's session now
                await self._drop_older(session, found)
                return False
            live = await self._drop(session, found, meta_from_item(meta_item))
            if live is not None:
                return live
        raise races.kept_changing(self._where, session)

    async def _drop(self, session: str, found: list[dict[str, Any]],
                    meta: Meta) -> bool | None:
        """Delete the session whose partition held ``found``: its meta item (if still of
        ``meta``'s ledger) and first items in one transaction, then the rest. Whether it
        was live; None when the meta item changed since the Query (read again).

        The condition is the ledger, not the version, so that writers appending as fast
        as they can never starve a delete (an erasure racing them): what they appended
        after the Query is found by a second one. None can append after the meta item
        is gone, as every write of a ledger is conditioned on its meta item. A
        placeholder is deleted only while it is one: its commit keeps the ledger, and a
        delete reporting no session must not take a batch acknowledged since (None:
        the next round finds the session)."""
        ledger = meta.info.ledger
        doomed = [item["sk"]["S"] for item in found if item["sk"]["S"] != META
                  and item.get("ledger", {}).get("S") == ledger]
        deletes = self.items.deletes(session, doomed, "ledger", ledger)
        condition = "ledger = :ledger" + ("" if meta.committed else
                                          " AND attribute_not_exists(sid)")
        refusal = await self._transact([{"Delete": {
            "TableName": self.table, "Key": self.items.key(session, META),
            "ConditionExpression": condition,
            "ExpressionAttributeValues": {":ledger": {"S": ledger}}}},
            *deletes[:TX_ITEMS - 1]])
        if refusal is not None:
            return None
        gone = set(doomed[:TX_ITEMS - 1])
        left = [item for item in await self._partition(session) if item["sk"]["S"] not in gone]
        # Everything but a new session's (a writer may have started one since): the rest
        # of this ledger, what writers appended to it meanwhile, and older ledgers' items
        # (a session that expired and was written again), which no reader reaches. The
        # new session's ledger is read after the Query, not from it: a Query is no
        # snapshot, and one started meanwhile could show its items but not its meta item.
        await self._drop_older(session, left)
        return self._live(meta, self.options.clock()) is not None

    async def _drop_older(self, session: str, found: list[dict[str, Any]]) -> None:
        """Delete the items of ``found`` of an older ledger than the session's now, which no
        reader reaches: a deleted ledger's, or what an expired session left under the new
        one written over it (its entries past the new one's length, its id items). The
        meta item is read after the Query: every ledger's meta item is written before its
        items, so a ledger of ``found`` is either the one read then, or older."""
        meta = await self._meta(session)
        current = None if meta is None else meta.info.ledger
        await self._drop_leftovers(session, [
            item for item in found
            if item["sk"]["S"] != META and item.get("ledger", {}).get("S") != current])

    async def _drop_leftovers(self, session: str, found: list[dict[str, Any]]) -> None:
        """Delete the items of ``found`` (of ledgers no meta item names any more), ledger by
        ledger, each on the condition that it is still of its ledger: a new session may be
        starting."""
        ledgers: dict[str, list[str]] = {}
        for item in found:
            ledgers.setdefault(item.get("ledger", {}).get("S", ""), []).append(item["sk"]["S"])
        for ledger, keys in ledgers.items():
            await self._delete_items(session, keys, "ledger", ledger)


def _meta_item(found: list[dict[str, Any]]) -> dict[str, Any] | None:
    return next((item for item in found if item["sk"]["S"] == META), None)
