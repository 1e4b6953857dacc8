"""Stores on a private DynamoDB emulator (moto, server mode): a table per test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from chatledger import RetryPolicy, Store, open_store
from chatledger.testing._dynamodb_server import DynamoDBServer
from tests.blocking import open_blocking_store
from tests.conftest import opener_on, retrying, store_opener

__all__ = ["OpenDynamo", "Opener", "items", "retrying"]

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
