"""Import what langchain_community's ``DynamoDBChatMessageHistory`` wrote.

It keeps a session in one item: the partition key (``SessionId`` by default)
and ``History``, a list of ``message_to_dict`` maps, oldest first (the whole
list rewritten on every append). Each item becomes the chatledger session of
the same id, oldest message first, in atomic batches of ``batch_size``. The
table is read with a paginated ``Scan``: a migration reads everything once,
and memory holds one page at a time.

Running it again imports nothing new: every message gets a stable ledger id
(its own LangChain id, or one derived from the table, the session and its
position in ``History``), and messages already in the session are skipped. A
message that cannot be decoded is reported with its session and position and
left behind; the rest of its session is imported.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from .._backends.dynamodb.io import DynamoSettings, make_client, translated
from .._sync.store import Store
from ._migrate import MigrationReport, Progress, import_session

__all__ = ["migrate_from_langchain_dynamodb"]


def migrate_from_langchain_dynamodb(
    table: str,
    store: Store,
    *,
    region: str | None = None,
    endpoint_url: str | None = None,
    key_name: str = "SessionId",
    dry_run: bool = False,
    progress: Progress | None = None,
    batch_size: int = 1000,
) -> MigrationReport:
    """Import every session of ``table`` (credentials from the AWS chain)."""
    report = MigrationReport(dry_run, unit="session")
    client = make_client(DynamoSettings(table, region, endpoint_url, create=False,
                                        profile=None, timeout=30.0))
    where = f"table {table}"
    with translated(where):
        report.keys_found = sum(page["Count"] for page in _pages(client, table, Select="COUNT"))
        done = 0
        for page in _pages(client, table):
            for item in page["Items"]:
                session_id = str(_plain(item[key_name]))
                history = _plain(item.get("History", {"L": []}))
                rows = [(session_id, position, json.dumps(message, default=_number))
                        for position, message in enumerate(history)]
                import_session(store, report, table, session_id, rows=rows,
                               batch_size=batch_size)
                done += 1
                if progress is not None:
                    progress(done, report.keys_found)
    return report


def _pages(client: Any, table: str, **options: Any) -> Any:
    request: dict[str, Any] = {"TableName": table, **options}
    while True:
        page = client.scan(**request)
        yield page
        if "LastEvaluatedKey" not in page:
            return
        request["ExclusiveStartKey"] = page["LastEvaluatedKey"]


_DESERIALIZER = TypeDeserializer()


def _plain(value: dict[str, Any]) -> Any:
    return _DESERIALIZER.deserialize(value)


def _number(value: object) -> int | float:
    """DynamoDB's numbers come back as Decimal: ints stay ints."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")
