"""moto's DynamoDB in server mode, made fast and serial enough to test against.

Run as ``python -m chatledger.testing._moto_main HOST PORT`` by
:class:`chatledger.testing._dynamodb_server.DynamoDBServer`. It serves moto's
own WSGI application over real HTTP, with three changes found by profiling
moto 5.2 under the contract suite (about 8 ``TransactWriteItems`` a second
on a table of a few thousand items, slower as the table grew):

* ``TransactWriteItems`` deep-copied every table it touched, whole, to roll
  back a cancelled transaction: here it keeps a copy of the items it touches
  only, and puts them back when the transaction is cancelled.
* A ``Query`` on the table's key walked every item of the table to find one
  partition: here it walks that partition.
* Every attribute set on an item summed the sizes of all its attributes
  (quadratic in the attributes, and a 350 KB value measured again each time),
  and every request listed the handler class's methods with ``inspect``: here
  an item's size is checked once, when it is made, and the list is kept.
* Requests ran concurrently on werkzeug's threads with no lock in moto, so two
  transactions could interleave; DynamoDB serializes them. Here one request
  runs at a time, and none is logged.

It also answers what an emulator never says by itself: ``POST /__faults__``
with ``{"code": ..., "count": N, "operation": "TransactWriteItems", "after":
false}`` makes the next N requests of that operation fail with DynamoDB's
error ``code`` (``ThrottlingException``, ``InternalServerError``, or
``TransactionConflict`` as a cancelled transaction), before they are applied,
or after (``after``: the request is applied and its reply lost to the error).

What the emulator answers is otherwise moto's: the same validation, condition
expressions, cancellation reasons and indexes.
"""

from __future__ import annotations

import copy
import functools
import json
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any

from moto.core import responses, utils
from moto.dynamodb import models
from moto.dynamodb.exceptions import ItemSizeTooLarge
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.table import Table
from moto.moto_server.werkzeug_app import MotoRequestHandler, create_backend_app
from werkzeug.serving import make_server

__all__ = ["main"]


def _patch_transactions() -> None:

    class _TablesNotCopied:
        """moto's module-level ``copy``, except that a whole table is not copied."""

        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            return value if isinstance(value, Table) else copy.deepcopy(value, memo)

    setattr(models, "copy", _TablesNotCopied)  # noqa: B010 -- a module's global, replaced
    original = models.DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        saved = []
        for entry in transact_items:
            op = next(iter(entry.values()))
            table = self.get_table(op["TableName"])
            key = op.get("Key") or op["Item"]
            hash_key = DynamoType(key[table.hash_key_attr])
            range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
            item = table.get_item(hash_key, range_key)
            saved.append((table, hash_key, range_key, copy.deepcopy(item)))
        try:
            original(self, transact_items)
        except BaseException:
            for table, hash_key, range_key, item in reversed(saved):
                _restore(table, hash_key, range_key, item)
            raise

    models.DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]


def _restore(table: Any, hash_key: Any, range_key: Any, item: Any) -> None:
    if range_key is None:
        if item is None:
            table.items.pop(hash_key, None)
        else:
            table.items[hash_key] = item
        return
    if item is None:
        table.items.get(hash_key, {}).pop(range_key, None)
    else:
        table.items[hash_key][range_key] = item


def _patch_queries() -> None:

    all_items = Table.all_items
    query = Table.query
    partition: list[Any] = []  # the hash key of the running table Query (one at a time)

    def partition_items(self: Table) -> list[Any]:
        if partition and self.range_key_attr:
            return list(self.items.get(partition[0], {}).values())
        return all_items(self)

    def partition_query(self: Table, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("index_name") or (len(args) > 6 and args[6]):
            return query(self, hash_key, *args, **kwargs)
        partition.append(hash_key)
        try:
            return query(self, hash_key, *args, **kwargs)
        finally:
            partition.clear()

    Table.all_items = partition_items  # type: ignore[method-assign]
    Table.query = partition_query  # type: ignore[method-assign]


_STATUS = {"InternalServerError": "500 Internal Server Error",
           "ServiceUnavailable": "503 Service Unavailable"}


def _error_reply(code: str) -> tuple[str, bytes]:
    """The status and JSON body DynamoDB answers an error ``code`` with."""
    if code == "TransactionConflict":
        body = {"__type": "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
                "message": "Transaction cancelled, please refer cancellation reasons for "
                           "specific reasons [TransactionConflict]",
                "CancellationReasons": [{"Code": "TransactionConflict",
                                         "Message": "Transaction is ongoing for the item"}]}
    else:
        body = {"__type": f"com.amazonaws.dynamodb.v20120810#{code}",
                "message": f"injected {code}"}
    return _STATUS.get(code, "400 Bad Request"), json.dumps(body).encode()


class _Faults:
    """Error replies armed by ``POST /__faults__``, consumed by matching requests."""

    def __init__(self) -> None:
        self.armed: list[dict[str, Any]] = []

    def arm(self, environ: dict[str, Any]) -> None:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        fault = json.loads(environ["wsgi.input"].read(length) or b"{}")
        self.armed.append({"count": 1, "operation": None, "after": False, **fault})

    def take(self, environ: dict[str, Any]) -> dict[str, Any] | None:
        target = str(environ.get("HTTP_X_AMZ_TARGET", "")).rpartition(".")[2]
        for fault in self.armed:
            if fault["operation"] in (None, target):
                fault["count"] -= 1
                if fault["count"] <= 0:
                    self.armed.remove(fault)
                return fault
        return None


def _patch_bookkeeping() -> None:
    listed = functools.lru_cache(maxsize=None)(utils.method_names_from_class)
    setattr(responses, "method_names_from_class", listed)  # noqa: B010
    setattr(LimitedSizeDict, "__setitem__", dict.__setitem__)  # noqa: B010
    made = Item.__init__

    def checked_once(self: Any, *args: Any, **kwargs: Any) -> None:
        made(self, *args, **kwargs)
        size = sum(len(key.encode()) + value.size() for key, value in self.attrs.items()
                   if isinstance(value, DynamoType))
        if size > 405_000:  # moto's limit: DynamoDB's 400 KB, as measured
            raise ItemSizeTooLarge

    setattr(Item, "__init__", checked_once)  # noqa: B010


def _serial(app: Callable[..., Iterable[bytes]]) -> Callable[..., list[bytes]]:
    lock = threading.Lock()
    faults = _Faults()

    def serve(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        with lock:  # the body is read and the reply built inside: one request at a time
            if environ.get("PATH_INFO") == "/__faults__":
                faults.arm(environ)
                start_response("200 OK", [("Content-Type", "application/json")])
                return [b"{}"]
            fault = faults.take(environ)
            if fault is None:
                return list(app(environ, start_response))
            if fault["after"]:
                list(app(environ, lambda *args, **kwargs: None))
            status, body = _error_reply(fault["code"])
            start_response(status, [("Content-Type", "application/x-amz-json-1.0"),
                                    ("Content-Length", str(len(body)))])
            return [body]

    return serve


def main(argv: list[str] | None = None) -> None:
    host, port = (argv or sys.argv[1:])[:2]
    _patch_transactions()
    _patch_queries()
    _patch_bookkeeping()

    class _Quiet(MotoRequestHandler):
        def log_request(self, *args: Any, **kwargs: Any) -> None:
            pass

    app = create_backend_app("dynamodb")  # DynamoDB only: no dispatch on the Host header
    server = make_server(host, int(port), _serial(app), threaded=True, request_handler=_Quiet)
    # The parent reads the port from this line: port 0 lets the OS pick a free one.
    print(f"listening on {host}:{server.server_port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
