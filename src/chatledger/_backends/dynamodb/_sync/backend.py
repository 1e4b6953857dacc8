# Generated from src/chatledger/_backends/dynamodb/_async/backend.py by scripts/unasync.py: edit that file, not this one.
"""``dynamodb://``: the ten promises on DynamoDB, through aiobotocore (and boto3).

The source of ``_sync/``: the backend's logic is written once, here and in the
modules beside it; its requests go through a seam, :class:`..io.DynamoClient`
(aiobotocore, on the event loop: no worker threads), whose sync twin
:class:`..io.DynamoClient` (boto3) the generated modules call.

The table's layout is in :mod:`..layout`: a partition per session, an item per
message, an item per message id, a meta item with the state. The backend is
its parts, one concept each, over the requests they share (:mod:`.table`):

* :mod:`.appends`: one conditional transaction, again while other processes'
  writers win the race for the meta item; :mod:`.large` a batch over one
  transaction, under a lease;
* :mod:`.reads`: a window of entries; :mod:`.listing` the sessions of a namespace;
* :mod:`.rewrites`: trim and reseal; :mod:`.erasure` delete and forget a user's sessions.

Everything is in the store's clock, except the leases (real time: they
bound a real writer). botocore's retries are off; throttling, transaction
conflicts and server errors are BackendUnavailable, retried by the store
with the same message ids.
"""

from __future__ import annotations

import time
from typing import Any

from ...._checks import Check
from ...._errors import BackendUnavailable, ChatLedgerError
from ...._options import StoreOptions
from ...._url import StoreURL
from ...registry import builtin_schemes
from ..checks import round_trip, table_checks, unreachable
from ..io import table_spec
from ..layout import TTL_ATTRIBUTE, entry_key
from .appends import Appends
from .erasure import Erasure
from .listing import Listing
from .rewrites import Rewrites

__all__ = ["DynamoDBBackend"]

_TABLE_WAITS = 120  # seconds a new table may take to become ACTIVE


class DynamoDBBackend(Appends, Listing, Rewrites, Erasure):
    """Conditional writes and transactions keep the rules."""

    schemes = builtin_schemes(__name__)
    supports_users = True

    def __init__(self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]) -> None:
        super().__init__(url, options, extra)
        self.created = False  # whether open() created the table (create=true)

    def purge(self, prefix: str) -> int:
        purged = 0
        for sid, _ in self._index(prefix, None, None):
            purged += self.delete(sid)
        return purged

    def open(self) -> None:
        self.io.client()
        if self.settings.create:
            self.created = self._create_table()

    def _create_table(self) -> bool:
        """Create the table (on-demand, TTL on ``exp``) unless it exists; whether it did."""
        made = self._call("create_table", tolerate="ResourceInUseException",
                                **table_spec(self.table))
        if made is None:
            return False
        for _ in range(_TABLE_WAITS):  # DynamoDB takes seconds to make a table ACTIVE
            described = self._call("describe_table", TableName=self.table)
            if described["Table"].get("TableStatus") == "ACTIVE":
                break
            time.sleep(1.0)
        else:
            raise BackendUnavailable(f"dynamodb {self._where}: the new table is not ACTIVE "
                                     f"after {_TABLE_WAITS} s")
        self._call("update_time_to_live", TableName=self.table, TimeToLiveSpecification={
            "Enabled": True, "AttributeName": TTL_ATTRIBUTE})
        return True

    def close(self) -> None:
        self._known.clear()
        self.io.close()

    def checks(self) -> list[Check]:
        """Status, key schema, TTL, billing, PITR and a round trip; never raises."""
        try:
            described = self._call("describe_table", TableName=self.table)
            ttl = self._call("describe_time_to_live", TableName=self.table)
            backups = self._call("describe_continuous_backups", TableName=self.table)
        except ChatLedgerError as exc:
            return [unreachable(self._where, exc)]
        found = table_checks(described["Table"], ttl["TimeToLiveDescription"],
                             backups["ContinuousBackupsDescription"])
        if any(check.status == "fail" for check in found):
            return found  # a table that is not chatledger's would only refuse a GetItem too
        elapsed: float | Exception
        try:
            started = time.perf_counter()
            self._meta("\x00doctor")
            elapsed = time.perf_counter() - started
        except ChatLedgerError as exc:
            elapsed = exc
        return [*found, round_trip(elapsed)]

    def corrupt_entry(self, session: str, seq: int, blob: bytes) -> None:
        self._call("update_item", TableName=self.table,
                         Key=self.items.key(session, entry_key(seq)),
                         UpdateExpression="SET b = :b REMOVE parts",
                         ConditionExpression="attribute_exists(pk)",
                         ExpressionAttributeValues={":b": {"B": blob}})
