"""What does one agent turn cost on DynamoDB: requests and capacity units, chatledger
against langchain_community's DynamoDBChatMessageHistory.

A "turn" is what an agent does on every request: read the last 20 messages to
build the prompt, then store one user/assistant pair. On an emulator absolute
times mean nothing, so this counts what DynamoDB bills: the requests of a turn
and the read and write capacity units they consume, computed from the items
each request reads and writes with DynamoDB's published rules (an item's size
is its attribute names plus values; a strongly consistent read costs a unit
per 4 KB read, at least one a request; a write costs a unit per KB written,
twice that inside a transaction; an index write costs as much again). moto
reports a fixed number of units whatever the size, which is why they are
computed here from what went over the wire.

Contenders, at 10, 1,000 and 10,000 messages of history:

- chatledger on ``dynamodb://``: ``session.read(last=20)`` then
  ``session.append([user, assistant])`` (the store's own, remembered state);
- ``DynamoDBChatMessageHistory``: ``.messages`` then ``add_messages([...])``.
  It keeps the whole session in one item, read and rewritten by every append:
  past 400 KB (under 1,000 messages of this size) DynamoDB refuses the item;
  moto stores it anyway, so the table says where DynamoDB would refuse.

    python benchmarks/dynamodb_turn.py            # 20 turns per length
    python benchmarks/dynamodb_turn.py --quick    # 5 turns per length
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import sys
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import boto3
from langchain_core.messages import AIMessage, HumanMessage

from chatledger import assistant, open_store, user
from chatledger._backends.dynamodb._sync.backend import DynamoDBBackend
from chatledger._sync.store import raw_access
from chatledger.testing._dynamodb_server import DynamoDBServer

LENGTHS = (10, 1_000, 10_000)
TEXT = "a message of ordinary length in a support conversation, about this long. " * 2


@dataclass
class Meter:
    """Requests and capacity units seen by botocore's hooks, from the items themselves."""

    requests: int = 0
    read_units: float = 0.0
    write_units: float = 0.0
    largest_write: int = 0  # bytes of the largest item written
    operations: list[str] = field(default_factory=list)

    def record(self, operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> None:
        self.requests += 1
        self.operations.append(operation)
        read, write = _units(operation, params, parsed)
        self.read_units += read
        self.write_units += write
        self.largest_write = max(self.largest_write, _written(operation, params))


def _size(value: Any) -> int:
    """The size DynamoDB bills for one attribute value."""
    (kind, inner), = value.items()
    if kind == "S":
        return len(inner.encode())
    if kind == "B":  # base64 on the wire
        return len(base64.b64decode(inner))
    if kind == "N":
        return math.ceil(len(inner.lstrip("-").replace(".", "")) / 2) + 1
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "L":
        return 3 + sum(1 + _size(v) for v in inner)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + _size(v) for k, v in inner.items())
    return sum(_size({kind[0]: v}) for v in inner)  # SS, NS, BS


def item_size(item: dict[str, Any]) -> int:
    return sum(len(name.encode()) + _size(value) for name, value in item.items())


def _units(operation: str, params: dict[str, Any], parsed: dict[str, Any]) -> tuple[float, float]:
    if operation == "GetItem":
        return max(1, math.ceil(item_size(parsed.get("Item", {})) / 4096)), 0.0
    if operation == "Query":
        size = sum(item_size(i) for i in parsed.get("Items", []))
        return max(1, math.ceil(size / 4096)), 0.0
    if operation == "BatchGetItem":
        return sum(max(1, math.ceil(item_size(i) / 4096))
                   for items in parsed.get("Responses", {}).values() for i in items), 0.0
    if operation in ("PutItem", "UpdateItem"):
        return 0.0, max(1, math.ceil(_written(operation, params) / 1024))
    if operation == "TransactWriteItems":
        write = 0.0
        for entry in params["TransactItems"]:
            (kind, op), = entry.items()
            size = item_size(op["Item"]) if kind == "Put" else 200  # a meta item or a check
            write += 2 * max(1, math.ceil(size / 1024))
        return 0.0, write
    return 0.0, 0.0


def _written(operation: str, params: dict[str, Any]) -> int:
    """The size of the largest item a request writes (an UpdateItem's: at least what it sets)."""
    if operation == "PutItem":
        return item_size(params["Item"])
    if operation == "TransactWriteItems":
        return max((item_size(op["Put"]["Item"]) for op in params["TransactItems"]
                    if "Put" in op), default=0)
    if operation == "UpdateItem":  # the key and every value it sets (its History: all of it)
        return item_size(params["Key"]) + sum(
            _size(v) for v in params.get("ExpressionAttributeValues", {}).values())
    return 0


@contextmanager
def metered(client: Any) -> Iterator[Meter]:
    meter = Meter()

    # What went over the wire, both ways: the JSON DynamoDB bills, whatever layer
    # (client or resource) made the request.
    def after(http_response: Any, model: Any, context: dict[str, Any], **kwargs: Any) -> None:
        meter.record(model.name, context["sent"], json.loads(http_response.content or b"{}"))

    def before(params: dict[str, Any], context: dict[str, Any], **kwargs: Any) -> None:
        context["sent"] = json.loads(params["body"] or b"{}")

    client.meta.events.register("before-call.dynamodb", before)
    client.meta.events.register("after-call.dynamodb", after)
    try:
        yield meter
    finally:
        client.meta.events.unregister("after-call.dynamodb", after)
        client.meta.events.unregister("before-call.dynamodb", before)


def chatledger_turns(server: DynamoDBServer, length: int, turns: int) -> Meter | str:
    store = open_store(server.table_url(), namespace="bench")
    session = store.session(f"s{length}")
    for start in range(0, length, 40):  # the history, off the meter
        session.append([user(f"{TEXT} {i}") for i in range(start, min(length, start + 40))])
    backend = raw_access(store)  # metered at the driver: what goes over the wire
    assert isinstance(backend, DynamoDBBackend)
    with metered(backend.io.client()) as meter:
        for turn in range(turns):
            session.read(last=20)
            session.append([user(f"{TEXT} q{turn}"), assistant(f"{TEXT} a{turn}")])
    store.close()
    return meter


def langchain_turns(server: DynamoDBServer, length: int, turns: int) -> Meter | str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.chat_message_histories import (  # noqa: PLC0415
            DynamoDBChatMessageHistory,  # its import warns that the package is sunset
        )

    table = f"SessionTable-{uuid.uuid4().hex[:8]}"
    raw = boto3.client("dynamodb", region_name=server.region, endpoint_url=server.endpoint_url)
    raw.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                     AttributeDefinitions=[{"AttributeName": "SessionId", "AttributeType": "S"}],
                     KeySchema=[{"AttributeName": "SessionId", "KeyType": "HASH"}])
    history = DynamoDBChatMessageHistory(table_name=table, session_id="s",
                                         endpoint_url=server.endpoint_url)
    try:
        history.add_messages([HumanMessage(f"{TEXT} {i}") for i in range(length)])  # one item
    except Exception as exc:
        return f"cannot store the history: {type(exc).__name__}"
    history.clear = lambda: None  # type: ignore[method-assign]
    with metered(history.table.meta.client) as meter:
        for turn in range(turns):
            _ = history.messages[-20:]
            history.add_messages([HumanMessage(f"{TEXT} q{turn}"), AIMessage(f"{TEXT} a{turn}")])
    return meter


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="5 turns per length")
    args = parser.parse_args(argv)
    turns = 5 if args.quick else 20
    contenders: list[tuple[str, Callable[[DynamoDBServer, int, int], Meter | str]]] = [
        ("chatledger", chatledger_turns), ("DynamoDBChatMessageHistory", langchain_turns)]
    rows: dict[tuple[str, int], Meter | str] = {}
    with DynamoDBServer() as server:
        for length in LENGTHS:
            for name, run in contenders:
                rows[name, length] = run(server, length, turns)
    print(f"{'per turn':<28}{'history':>9}{'requests':>10}{'read units':>12}"
          f"{'write units':>13}{'largest item':>14}")
    print("-" * 86)
    for (name, length), meter in rows.items():
        if isinstance(meter, str):
            print(f"{name:<28}{length:>9,}  {meter}")
            continue
        over = "  over DynamoDB's 400 KB: refused there" if meter.largest_write > 400_000 else ""
        print(f"{name:<28}{length:>9,}{meter.requests / turns:>10.1f}"
              f"{meter.read_units / turns:>12.1f}{meter.write_units / turns:>13.1f}"
              f"{meter.largest_write / 1024:>11.1f} KB{over}")
    flat = [m for (n, _), m in rows.items() if n == "chatledger" and not isinstance(m, str)]
    units = [(m.read_units + m.write_units) / turns for m in flat]
    print(f"\nchatledger units per turn, 10,000 / 10 messages (target: flat, <= 1.3): "
          f"{units[-1] / units[0]:.2f}  {'PASS' if units[-1] <= 1.3 * units[0] else 'MISS'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
