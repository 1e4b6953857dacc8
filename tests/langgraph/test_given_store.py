"""A saver on a store it was given leaves the store open when it closes."""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint

from chatledger import open_async_store, open_store
from chatledger.langgraph import AsyncLedgerSaver, LedgerSaver

CONFIG: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
STARTS: Any = {"source": "input", "step": -1}


def test_the_sync_saver_leaves_a_given_store_open(url: str) -> None:
    with open_store(url) as store:
        with LedgerSaver(store) as saver:
            stored = saver.put(CONFIG, empty_checkpoint(), STARTS, {})
        with LedgerSaver(store) as again:  # the store still works
            found = again.get_tuple(CONFIG)
    assert found is not None and found.config == stored


def test_the_async_saver_leaves_a_given_store_open(url: str) -> None:
    async def run() -> Any:
        async with await open_async_store(url) as store:
            async with AsyncLedgerSaver(store) as saver:
                stored = await saver.aput(CONFIG, empty_checkpoint(), STARTS, {})
            async with AsyncLedgerSaver(store) as again:
                return stored, await again.aget_tuple(CONFIG)

    stored, found = asyncio.run(run())
    assert found is not None and found.config == stored
