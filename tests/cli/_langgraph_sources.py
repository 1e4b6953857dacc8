"""Savers and stores for ``migrate --from-langgraph(-store) module:factory`` in the CLI's tests."""

from __future__ import annotations

import os
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

WRITTEN = InMemorySaver()
"""Written by the test that names it; the command runs in the test's process."""


def written() -> InMemorySaver:
    return WRITTEN


def dynamodb() -> Any:
    """DynamoDBSaver on the table and endpoint the test puts in the environment."""
    from langgraph_checkpoint_aws import DynamoDBSaver

    return DynamoDBSaver(os.environ["LG_TABLE"], region_name="us-east-1",
                         endpoint_url=os.environ["LG_ENDPOINT"])


def broken() -> Any:
    raise ConnectionError("the saver's server is down")


WRITTEN_STORE = InMemoryStore()
"""The store ``migrate --from-langgraph-store`` reads in the test that fills it."""


def written_store() -> InMemoryStore:
    return WRITTEN_STORE
