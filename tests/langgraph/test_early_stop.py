"""A listing stopped early (``break``, then ``aclose()``/``close()``) closes the
generator under the terms wrapper (``_terms.py``) then and there: its ``finally``
(a cursor, a connection lease) runs before ``aclose()`` returns, not whenever the
collector finds it."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any

from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from chatledger.langgraph import AsyncLedgerSaver, LedgerSaver
from chatledger.langgraph._terms import thread_terms

MD: Any = {"source": "loop", "step": 0}


def _config() -> Any:
    return {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def _checkpoints(count: int) -> list[Any]:
    made = [empty_checkpoint()]
    for step in range(1, count):
        made.append(create_checkpoint(made[-1], None, step))
    return made


def test_an_async_generator_stopped_early_runs_its_finally_at_aclose() -> None:
    events: list[str] = []

    @thread_terms
    async def leased() -> AsyncIterator[int]:
        try:
            for n in range(3):
                yield n
        finally:
            events.append("lease released")

    async def main() -> None:
        listing: Any = leased()
        async for _ in listing:
            break
        await listing.aclose()
        events.append("aclose returned")

    asyncio.run(main())
    assert events == ["lease released", "aclose returned"]


def test_a_generator_stopped_early_runs_its_finally_at_close() -> None:
    events: list[str] = []

    @thread_terms
    def leased() -> Iterator[int]:
        try:
            yield from range(3)
        finally:
            events.append("lease released")

    listing: Any = leased()
    for _ in listing:
        break
    listing.close()
    events.append("close returned")
    assert events == ["lease released", "close returned"]


def test_alist_stopped_early_closes_the_saver_listing(url: str) -> None:
    inner_code = AsyncLedgerSaver.alist.__wrapped__.__code__  # type: ignore[attr-defined]

    async def main() -> tuple[int, list[bool]]:
        started: list[Any] = []
        firstiter, finalizer = sys.get_asyncgen_hooks()

        def recorded(agen: Any) -> None:  # every async generator, as it starts
            started.append(agen)
            if firstiter is not None:
                firstiter(agen)

        async with await AsyncLedgerSaver.from_url(url) as saver:
            parent = None
            for checkpoint in _checkpoints(3):
                config: Any = _config() if parent is None else {
                    "configurable": {**_config()["configurable"], "checkpoint_id": parent}}
                await saver.aput(config, checkpoint, MD, {})
                parent = checkpoint["id"]
            sys.set_asyncgen_hooks(firstiter=recorded, finalizer=finalizer)
            try:
                listing: Any = saver.alist(_config())
                got = [item async for item in _first(listing)]
                await listing.aclose()
                # Asked now: asyncio.run closes every generator left open at its end.
                suspended = [agen.ag_frame is not None for agen in started
                             if agen.ag_code is inner_code]
            finally:
                sys.set_asyncgen_hooks(firstiter=firstiter, finalizer=finalizer)
        return len(got), suspended

    got, suspended = asyncio.run(main())
    assert got == 1
    assert suspended == [False]  # closed by aclose(), not left suspended


def test_list_stopped_early_closes_the_saver_listing(url: str) -> None:
    with LedgerSaver.from_url(url) as saver:
        parent = None
        for checkpoint in _checkpoints(3):
            config: Any = _config() if parent is None else {
                "configurable": {**_config()["configurable"], "checkpoint_id": parent}}
            saver.put(config, checkpoint, MD, {})
            parent = checkpoint["id"]
        listing: Any = saver.list(_config())
        next(listing)
        inner = listing.gi_yieldfrom  # the saver's own listing, under the terms wrapper
        listing.close()
    assert inner is not None and inner.gi_frame is None


async def _first(listing: AsyncIterator[Any]) -> AsyncIterator[Any]:
    async for item in listing:
        yield item
        break
