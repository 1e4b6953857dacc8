# Generated from src/chatledger/_backends/dynamodb/_async/large.py by scripts/unasync.py: edit that file, not this one.
"""The large path of an append: a lease, fenced transactions, one commit.

A batch one transaction cannot hold (100 items, 4 MB) or a message over the
item limit (400 KB) takes a lease on the meta item (:mod:`..leases`), then
writes its items in as many transactions as needed, each fenced by a condition
that the lease is still its own, then one conditional write of the meta item
that commits the whole batch at once and drops the lease. Readers read only up
to the committed version, so they never see part of a batch; a writer that
meets an expired lease takes it over and deletes what the dead attempt left.
"""

from __future__ import annotations

import time
from typing import Any

from ...._errors import BackendUnavailable
from ...contract import Batch, RawInfo
from ..conditions import Refused, unchanged_or_absent
from ..layout import META, USER, Meta, entry_key, id_key, number
from ..leases import LEASE_SECONDS, fresh_token, token
from ..transactions import chunks
from .table import Table

__all__ = ["LargeAppends"]


class LargeAppends(Table):
    """Appends over one transaction, and the clean-up of a writer that died in one."""

    def _append_large(self, session: str, meta: Meta | None, state: RawInfo | None,
                            grown: RawInfo, batch: Batch) -> Refused | None:
        """Write ``batch`` under a lease and commit it; None once committed, else the
        refusal of the step that lost a race (nothing of the batch is visible)."""
        version = state.version if state else 0
        tok = token(batch, meta) if meta is not None and meta.lease else fresh_token(
            batch, version, grown.ledger)
        if meta is None or meta.lease != tok:
            refusal = self._take_lease(session, meta, state, grown, tok)
            if refusal is not None:
                return refusal
        fence = {"ConditionCheck": {
            "TableName": self.table, "Key": self.items.key(session, META),
            "ConditionExpression": "lease = :lease",
            "ExpressionAttributeValues": {":lease": {"S": tok}}}}
        puts = self.items.message_items(session, version + 1, grown.ledger, batch, tok,
                                        conditional=False)
        for chunk in chunks(puts):
            refusal = self._transact([fence, *chunk])
            if refusal is not None:
                return refusal
        # The index item again, a no-op Put after the placeholder's (_take_lease); it covers
        # a placeholder put by a build that indexed a large append only here, at its commit.
        return self._transact([self._commit_write(session, state, grown, tok),
                                     *self.items.indexed(session, state, grown)])

    def _take_lease(self, session: str, meta: Meta | None, state: RawInfo | None,
                          grown: RawInfo, tok: str) -> Refused | None:
        until = {":lease": {"S": tok}, ":until": number(time.time() + LEASE_SECONDS)}
        if state is not None:
            return self._transact([{"Update": {
                "TableName": self.table, "Key": self.items.key(session, META),
                "UpdateExpression": "SET lease = :lease, lease_until = :until",
                "ConditionExpression": "ver = :v AND ledger = :ledger AND "
                                       "attribute_not_exists(lease)",
                "ExpressionAttributeValues": {**until, ":v": number(state.version),
                                              ":ledger": {"S": state.ledger}}}}])
        placeholder = {**self.items.key(session, META), "ver": number(0), "first": number(1),
                       "created": number(grown.created_at), "updated": number(grown.updated_at),
                       "ledger": {"S": grown.ledger}, "lease": until[":lease"],
                       "lease_until": until[":until"],
                       **({USER: {"S": grown.user}} if grown.user is not None else {})}
        # The index item goes with the placeholder, not only with the commit: from here
        # on the table holds the user's messages (the chunks), and forget_user finds a
        # session through the index alone. It deletes the placeholder, which fences the
        # chunks still to come out, and what landed; a dead writer's is found the same way.
        return self._transact([{"Put": {"TableName": self.table, "Item": placeholder,
                                              **unchanged_or_absent(meta)}},
                                     *self.items.indexed(session, state, grown)])

    def _commit_write(self, session: str, state: RawInfo | None, grown: RawInfo,
                      tok: str) -> dict[str, Any]:
        if state is not None:
            return self.items.meta_write(session, None, state, grown, lease=tok)
        return {"Put": {"TableName": self.table,
                        "Item": {**self.items.key(session, META),
                                 **self.items.meta_attributes(session, grown)},
                        "ConditionExpression": "lease = :lease",
                        "ExpressionAttributeValues": {":lease": {"S": tok}}}}

    def _settle_lease(self, session: str, meta: Meta) -> None:
        """Wait for a live lease (BackendUnavailable); take over an expired one and clean
        up. Either way the meta item changes: the caller reads it again."""
        if meta.lease_until > time.time():
            raise BackendUnavailable(f"dynamodb {self._where}: a large append to session "
                                     f"{session!r} is being written; retry")
        dead, mine = meta.lease, f"{meta.lease}~{time.time()}"
        assert dead is not None
        values = {":dead": {"S": dead}, ":v": number(meta.info.version)}
        key = self.items.key(session, META)
        taken = self._transact([{"Update": {
            "TableName": self.table, "Key": key,
            "UpdateExpression": "SET lease = :mine", "ConditionExpression":
                "lease = :dead AND ver = :v",
            "ExpressionAttributeValues": {**values, ":mine": {"S": mine}}}}])
        if taken is not None:  # another writer took it over first
            return
        self._delete_leftovers(session, meta.info.version, dead)
        release: dict[str, Any] = {"TableName": self.table, "Key": key,
                                   "ConditionExpression": "lease = :mine",
                                   "ExpressionAttributeValues": {":mine": {"S": mine}}}
        if meta.committed:
            release["UpdateExpression"] = "REMOVE lease, lease_until"
            self._transact([{"Update": release}])
        else:
            self._transact([{"Delete": release}])

    def _delete_leftovers(self, session: str, version: int, tok: str) -> None:
        """Delete what the append of lease ``tok`` wrote: entries, parts, ids above ``version``."""
        above = self._query(session, "sk BETWEEN :low AND :high",
                                  {":low": {"S": entry_key(version + 1)},
                                   ":high": {"S": entry_key(10 ** 20 - 1)}})
        parts = self._query(session, "begins_with(sk, :p)", {":p": {"S": f"p{tok}/"}})
        doomed = [item for item in above if item.get("tok", {}).get("S") == tok]
        keys = [item["sk"]["S"] for item in doomed + parts]
        keys += [id_key(item["mid"]["B"]) for item in doomed]
        self._delete_items(session, keys, "tok", tok)
