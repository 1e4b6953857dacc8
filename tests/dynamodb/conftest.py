"""Stores on a private DynamoDB emulator (moto, server mode): a table per test."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest

from chatledger import RetryPolicy, Store
from chatledger.testing._dynamodb_server import DynamoDBServer
from tests.conftest import store_opener

OpenDynamo = Callable[..., Store]


@pytest.fixture
def namespace() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def open_dynamo(dynamodb_url: str, namespace: str) -> Iterator[OpenDynamo]:
    """Open stores on the test's table (or ``url=``): a fresh namespace, no retries."""
    with store_opener(dynamodb_url, namespace=namespace, retry=RetryPolicy.none()) as open_:
        yield open_


@pytest.fixture
def raw(dynamodb_server: DynamoDBServer) -> Any:
    """A plain boto3 client on the emulator, to look behind the store."""
    return boto3.client("dynamodb", region_name=dynamodb_server.region,
                        endpoint_url=dynamodb_server.endpoint_url)


def retrying(attempts: int = 8, deadline: float = 10.0) -> RetryPolicy:
    return RetryPolicy(attempts=attempts, backoff=0.01, max_backoff=0.05, deadline=deadline)


def items(raw: Any, url: str) -> list[dict[str, Any]]:
    """Every item of the table behind ``url``."""
    table = url.split("://", 1)[1].split("?", 1)[0]
    return list(raw.scan(TableName=table, ConsistentRead=True)["Items"])
