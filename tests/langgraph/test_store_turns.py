"""A store runs at most BATCHES_AT_ONCE batches at once; the others wait their turn
before any call starts (and its deadline with it): thousands of ops gathered at
once, as LangGraph's own tests do, run to the end instead of expiring in a queue."""

from __future__ import annotations

import asyncio
import threading
import uuid

from langchain_core.embeddings import Embeddings

from chatledger import open_async_store
from chatledger.langgraph import AsyncLedgerStore, LedgerStore
from chatledger.langgraph._store_bridge import BATCHES_AT_ONCE

GATHERED = 3 * BATCHES_AT_ONCE


class _HeldEmbeddings(Embeddings):
    """Embeddings that hold every put inside its batch until released, counting them."""

    def __init__(self) -> None:
        self.inside = 0
        self.most = 0
        self.release = threading.Event()
        self.full = threading.Event()
        self._lock = threading.Lock()

    def _enter(self) -> None:
        with self._lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
            if self.inside == BATCHES_AT_ONCE:
                self.full.set()

    def _leave(self) -> None:
        with self._lock:
            self.inside -= 1

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self._enter()
        self.release.wait()
        self._leave()
        return [[1.0, 0.0] for _ in texts]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        self._enter()
        while not self.release.is_set():
            await asyncio.sleep(0)  # let every other gathered put reach its turn
        self._leave()
        return [[1.0, 0.0] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0]


def test_the_async_store_runs_a_few_batches_at_once_and_the_rest_after() -> None:
    held = _HeldEmbeddings()

    async def run() -> list[str]:
        store = AsyncLedgerStore(await open_async_store(f"memory://{uuid.uuid4().hex}"),
                                 index={"dims": 2, "embed": held}, owns_store=True)
        async with store:
            puts = [asyncio.ensure_future(store.aput(("n",), f"k{i}", {"text": "t"}))
                    for i in range(GATHERED)]
            while not held.full.is_set():
                await asyncio.sleep(0)
            for _ in range(50):  # room for any more to come in: none may
                await asyncio.sleep(0)
            assert held.inside == BATCHES_AT_ONCE
            held.release.set()
            await asyncio.gather(*puts)
            return sorted(item.key for item in await store.asearch(("n",), limit=100))

    assert len(asyncio.run(run())) == GATHERED
    assert held.most == BATCHES_AT_ONCE


def test_the_sync_store_runs_a_few_batches_at_once_across_threads() -> None:
    held = _HeldEmbeddings()
    with LedgerStore.from_url(f"memory://{uuid.uuid4().hex}",
                              index={"dims": 2, "embed": held}) as store:
        threads = [threading.Thread(target=store.put, args=(("n",), f"k{i}", {"text": "t"}))
                   for i in range(GATHERED)]
        for thread in threads:
            thread.start()
        assert held.full.wait(30)
        entered = held.most
        held.release.set()
        for thread in threads:
            thread.join()
        assert len(store.search(("n",), limit=100)) == GATHERED
    assert entered == held.most == BATCHES_AT_ONCE
