# Generated from src/chatledger/_backends/dynamodb/_async/table.py by scripts/unasync.py: edit that file, not this one.
"""The table as the backend's parts use it: the requests, their settings, and the
reads and writes every part makes (a meta item, a transaction, a partition's items).

A transaction cancelled by a failed condition is a value (:class:`..conditions.Refused`),
not an exception: the caller decides what a lost race means for it.
"""

from __future__ import annotations

from typing import Any

from ...._options import StoreOptions
from ...._url import StoreURL
from ..._sync.base import Backend
from ...contract import RawInfo
from ...turns import Turns
from ..io import DynamoClient
from ..conditions import Refused, refused
from ..io import Cancelled, dynamo_settings
from ..items import Items
from ..known import KnownMetas
from ..layout import META, USER, Meta, meta_from_item, partition
from ..transactions import chunks

__all__ = ["Table"]

_QUERY_PAGE = 1_000  # the largest Limit a windowed read asks for
_LISTED = ("sk", "ledger", "tok", "parts", "ver", "first", "created", "updated", "exp",
           "lease", "lease_until", "sid", USER)


class Table(Backend):
    """The requests of one table and namespace, shared by the backend's parts."""

    def __init__(self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]) -> None:
        super().__init__(url, options, extra)
        self.settings = dynamo_settings(url, options, extra)
        self.table = self.settings.table
        self._where = url.redacted()
        self.io = DynamoClient(self.settings, self._where)
        self.items = Items(self.table, options.namespace)
        self._known = KnownMetas()
        # This backend's appends to a session wait their turn rather than race each other
        # through DynamoDB (Turns says why): only other processes' writers race.
        self._turns = Turns()

    def _call(self, operation: str, **kwargs: Any) -> Any:
        return self.io.call(operation, **kwargs)

    def _meta(self, session: str) -> Meta | None:
        reply = self._call("get_item", TableName=self.table,
                                 Key=self.items.key(session, META), ConsistentRead=True)
        item = reply.get("Item")
        return None if item is None else meta_from_item(item)

    def _live(self, meta: Meta | None, now: float) -> RawInfo | None:
        if meta is None or not meta.committed or meta.info.expired(now):
            return None
        return meta.info

    def _transact(self, items: list[dict[str, Any]]) -> Refused | None:
        """One transaction; None when it was written, else which condition refused it."""
        try:
            self._call("transact_write_items", TransactItems=items)
        except Cancelled as cancelled:
            return refused(cancelled.reasons, self._where)
        return None

    def _query(self, session: str, condition: str, values: dict[str, Any], *,
                     limit: int | None = None, keys_only: bool = False) -> list[dict[str, Any]]:
        """Every item of the session's partition that ``condition`` selects, page by page."""
        request: dict[str, Any] = {
            "TableName": self.table, "ConsistentRead": True,
            "KeyConditionExpression": f"pk = :pk AND {condition}",
            "ExpressionAttributeValues": {
                ":pk": {"S": partition(self.options.namespace, session)}, **values}}
        if keys_only:  # what deleting needs, and a meta item's state: never the entries' bytes
            request["ProjectionExpression"] = ", ".join(f"#{name}" for name in _LISTED)
            request["ExpressionAttributeNames"] = {f"#{name}": name for name in _LISTED}
        items: list[dict[str, Any]] = []
        while True:
            if limit is not None:  # never more than the window: a huge last= asks for what exists
                request["Limit"] = min(limit - len(items), _QUERY_PAGE)
            reply = self._call("query", **request)
            items.extend(reply.get("Items", []))
            start = reply.get("LastEvaluatedKey")
            if start is None or (limit is not None and len(items) >= limit):
                return items
            request["ExclusiveStartKey"] = start

    def _partition(self, session: str) -> list[dict[str, Any]]:
        """Every item of the session's partition, without the entries' bytes."""
        return self._query(session, "sk >= :low", {":low": {"S": "\x00"}},
                                 keys_only=True)

    def _get_many(self, session: str, sort_keys: list[str]) -> list[dict[str, Any]]:
        """The items of ``sort_keys`` that exist in the session's partition."""
        return self._batch_get([self.items.key(session, sk)
                                      for sk in dict.fromkeys(sort_keys)])

    def _batch_get(self, keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The items of ``keys`` that exist, in any partitions (consistent
        ``BatchGetItem``, 100 a request)."""
        items: list[dict[str, Any]] = []
        pending = keys
        while pending:
            chunk, pending = pending[:100], pending[100:]
            request = {self.table: {"Keys": chunk, "ConsistentRead": True}}
            while request:
                reply = self._call("batch_get_item", RequestItems=request)
                items.extend(reply.get("Responses", {}).get(self.table, []))
                request = reply.get("UnprocessedKeys") or {}
        return items

    def _delete_items(self, session: str, sort_keys: list[str], attribute: str,
                            value: str) -> None:
        """Delete the items whose ``attribute`` is still ``value``; others are left."""
        for chunk in chunks(self.items.deletes(session, sort_keys, attribute, value)):
            if self._transact(chunk) is not None:
                # one was rewritten meanwhile: the others one by one, each kept if refused
                for delete in chunk:
                    self._transact([delete])
