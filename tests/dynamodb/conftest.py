"""Stores on a private DynamoDB emulator (moto, server mode): a table per test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest

from chatledger import Store
from chatledger.testing._dynamodb_server import DynamoDBServer
from tests.conftest import opener_on, retrying

__all__ = ["OpenDynamo", "items", "retrying"]

OpenDynamo = Callable[..., Store]

# Stores on the test's table (or ``url=``): a fresh namespace, no retries.
open_dynamo = opener_on("dynamodb_url")


@pytest.fixture
def raw(dynamodb_server: DynamoDBServer) -> Any:
    """A plain boto3 client on the emulator, to look behind the store."""
    return boto3.client("dynamodb", region_name=dynamodb_server.region,
                        endpoint_url=dynamodb_server.endpoint_url)


def items(raw: Any, url: str) -> list[dict[str, Any]]:
    """Every item of the table behind ``url``."""
    table = url.split("://", 1)[1].split("?", 1)[0]
    return list(raw.scan(TableName=table, ConsistentRead=True)["Items"])
