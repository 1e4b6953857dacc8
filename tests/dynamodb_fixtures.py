"""DynamoDB fixtures: moto's emulator in server mode, one per test session (and xdist worker).

Each test gets a table of its own (``dynamodb_url``): moto's reads walk a whole
table, so small tables keep the suite fast, and no test sees another's items.
Tests that pause the server take ``private_dynamodb``: gone when the test ends.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chatledger.testing._dynamodb_server import DynamoDBServer


@pytest.fixture(scope="session")
def dynamodb_server() -> Iterator[DynamoDBServer]:
    with DynamoDBServer() as server:
        yield server


@pytest.fixture
def dynamodb_url(dynamodb_server: DynamoDBServer) -> str:
    """A new table's URL."""
    return dynamodb_server.table_url()


@pytest.fixture
def private_dynamodb() -> Iterator[DynamoDBServer]:
    """A server for one test only, free to be paused or armed with errors."""
    with DynamoDBServer() as server:
        yield server
