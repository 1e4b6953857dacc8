"""The requests' items of one table and namespace: keys, and the writes of an append; no I/O."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from ..contract import Batch, RawInfo
from .conditions import unchanged_or_absent
from .layout import (
    META,
    TTL_ATTRIBUTE,
    USER,
    Meta,
    entry_key,
    id_key,
    number,
    part_key,
    partition,
    user_partition,
)
from .transactions import pieces

__all__ = ["Items"]


@dataclass(frozen=True)
class Items:
    """Where a session's items are in ``table`` for ``namespace``, and what an append puts."""

    table: str
    namespace: str

    def key(self, session: str, sort_key: str) -> dict[str, Any]:
        return {"pk": {"S": partition(self.namespace, session)}, "sk": {"S": sort_key}}

    def user_key(self, user: str, session: str) -> dict[str, Any]:
        """The user index's item of ``session``."""
        return {"pk": {"S": user_partition(self.namespace, user)}, "sk": {"S": session}}

    def meta_write(self, session: str, meta: Meta | None, state: RawInfo | None,
                   grown: RawInfo, *, lease: str | None = None,
                   now: float | None = None) -> dict[str, Any]:
        """Write the grown state, on the condition that the meta item is as read.

        A failed condition returns the item as it is (``ALL_OLD``): the next try
        starts from it without reading it again.
        """
        if state is None:  # a new ledger: replace whatever expired or was abandoned
            op: dict[str, Any] = {"Item": {**self.key(session, META),
                                           **self.meta_attributes(session, grown)},
                                  **unchanged_or_absent(meta, now),
                                  "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
            return {"Put": {"TableName": self.table, **op}}
        sets = ["ver = :ver", "updated = :updated"]
        values: dict[str, Any] = {":ver": number(grown.version),
                                  ":updated": number(grown.updated_at),
                                  ":v": number(state.version), ":ledger": {"S": state.ledger}}
        condition = "ver = :v AND ledger = :ledger AND "
        if lease is None:
            condition += "attribute_not_exists(lease)"
        else:
            condition += "lease = :lease"
            values[":lease"] = {"S": lease}
        removes = ["lease", "lease_until"]
        if grown.expires_at is None:
            removes.append(TTL_ATTRIBUTE)
        else:
            sets.append(f"{TTL_ATTRIBUTE} = :exp")
            values[":exp"] = number(grown.expires_at)
        return {"Update": {
            "TableName": self.table, "Key": self.key(session, META),
            "UpdateExpression": f"SET {', '.join(sets)} REMOVE {', '.join(removes)}",
            "ConditionExpression": condition, "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}

    def meta_attributes(self, session: str, state: RawInfo) -> dict[str, Any]:
        attributes = {"ver": number(state.version), "first": number(state.first_seq),
                      "created": number(state.created_at), "updated": number(state.updated_at),
                      "ledger": {"S": state.ledger}, "ns": {"S": self.namespace},
                      "sid": {"S": session}}
        if state.expires_at is not None:
            attributes[TTL_ATTRIBUTE] = number(state.expires_at)
        if state.user is not None:
            attributes[USER] = {"S": state.user}
        return attributes

    def indexed(self, session: str, state: RawInfo | None,
                grown: RawInfo) -> list[dict[str, Any]]:
        """The Put of a new tagged session's index item, in the transaction creating it."""
        if state is not None or grown.user is None:
            return []
        return [{"Put": {"TableName": self.table, "Item": self.user_key(grown.user, session)}}]

    def message_items(self, session: str, first_seq: int, ledger: str, batch: Batch,
                      tok: str, *, conditional: bool) -> list[dict[str, Any]]:
        """Puts of the batch's entries, their parts and their id items."""
        last = first_seq + len(batch.ids) - 1
        puts: list[dict[str, Any]] = []
        for seq, message_id, blob in zip(itertools.count(first_seq), batch.ids, batch.blobs):
            mid = message_id.encode("utf-8", "surrogatepass")
            split = pieces(blob)
            common = {"ledger": {"S": ledger}, "tok": {"S": tok}}
            entry = {**self.key(session, entry_key(seq)), **common, "b": {"B": split[0]},
                     "mid": {"B": mid}}
            if len(split) > 1:
                entry["parts"] = number(len(split) - 1)
            puts.append({"Put": {"TableName": self.table, "Item": entry}})
            for index, piece in enumerate(split[1:], 1):
                puts.append({"Put": {"TableName": self.table, "Item": {
                    **self.key(session, part_key(tok, seq, index)), **common,
                    "b": {"B": piece}}}})
            id_item = {**self.key(session, id_key(mid)), **common, "mid": {"B": mid},
                       "seq": number(seq), "bf": number(first_seq), "bl": number(last)}
            put: dict[str, Any] = {"TableName": self.table, "Item": id_item}
            if conditional:
                put["ConditionExpression"] = "attribute_not_exists(pk) OR ledger <> :ledger"
                put["ExpressionAttributeValues"] = {":ledger": {"S": ledger}}
            puts.append({"Put": put})
        return puts

    def deletes(self, session: str, sort_keys: list[str], attribute: str,
                value: str) -> list[dict[str, Any]]:
        """Deletes of the items whose ``attribute`` is still ``value``."""
        condition = {"ConditionExpression": f"{attribute} = :value",
                     "ExpressionAttributeValues": {":value": {"S": value}}}
        return [{"Delete": {"TableName": self.table, "Key": self.key(session, sk),
                            **condition}} for sk in dict.fromkeys(sort_keys)]
