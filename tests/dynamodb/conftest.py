"""Stores on a private DynamoDB emulator (moto, server mode): a table per test."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from chatledger import RetryPolicy, Store, open_store
from chatledger.testing._dynamodb_server import DynamoDBServer
from tests.blocking import open_blocking_store
from tests.conftest import opener_on, retrying, store_opener

__all__ = ["OpenDynamo", "Opener", "interleave", "items", "native", "retrying"]

OpenDynamo = Callable[..., Store]
Opener = Callable[..., Any]  # a sync Store, or an async one behind tests.blocking's view

# Stores on the test's table (or ``url=``): a fresh namespace, no retries.
open_dynamo = opener_on("dynamodb_url")


@pytest.fixture(params=["sync", "async"])
def opener(request: pytest.FixtureRequest, dynamodb_url: str,
           namespace: str) -> Iterator[Opener]:
    """Open stores of the test's table, sync or async (behind a blocking view): a fresh
    namespace, no retries unless told."""
    how = open_store if request.param == "sync" else open_blocking_store
    with store_opener(dynamodb_url, how, namespace=namespace,
                      retry=RetryPolicy.none()) as open_:
        yield open_


@pytest.fixture
def raw(dynamodb_server: DynamoDBServer) -> Any:
    """A plain boto3 client on the emulator, to look behind the store."""
    return boto3.client("dynamodb", region_name=dynamodb_server.region,
                        endpoint_url=dynamodb_server.endpoint_url)


def items(raw: Any, url: str) -> list[dict[str, Any]]:
    """Every item of the table behind ``url``."""
    table = url.split("://", 1)[1].split("?", 1)[0]
    return list(raw.scan(TableName=table, ConsistentRead=True)["Items"])


def native(thing: Any) -> Any:
    """A store or backend itself: the async one behind tests.blocking's view, or the sync one."""
    return getattr(thing, "_target", thing)


Chosen = Callable[[str, dict[str, Any], list[Any]], bool]


def interleave(store: Any, when: Chosen, action: Callable[[], Any], *,
               before: bool = False) -> list[Any]:
    """Run ``action`` (awaited, on the async path) right after (``before``: before) each
    request of ``store``'s backend that ``when(operation, kwargs, results so far)``
    picks, so that another store's call lands exactly there; the list returned gets
    each result. Deterministic: the writer waits for it, on its own thread or loop."""
    io = store._backend.io  # the request seam: the same object behind the blocking view
    call = io.call
    results: list[Any] = []
    if inspect.iscoroutinefunction(call):
        async def run_async() -> None:
            result = action()
            results.append(await result if inspect.isawaitable(result) else result)

        async def spy_async(operation: str, **kwargs: Any) -> Any:
            chosen = when(operation, kwargs, results)
            if chosen and before:
                await run_async()
            reply = await call(operation, **kwargs)
            if chosen and not before:
                await run_async()
            return reply

        io.call = spy_async
    else:
        def spy(operation: str, **kwargs: Any) -> Any:
            chosen = when(operation, kwargs, results)
            if chosen and before:
                results.append(action())
            reply = call(operation, **kwargs)
            if chosen and not before:
                results.append(action())
            return reply

        io.call = spy
    return results
