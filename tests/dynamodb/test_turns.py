"""One backend's appends to a session take turns instead of racing each other through
DynamoDB: each costs one transaction, none starves (the contract's concurrency tests
race writers of different processes)."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from chatledger import BackendUnavailable, RetryPolicy, open_async_store, user
from chatledger._backends.turns import AsyncTurns, Turns
from chatledger._deadline import CALL_DEADLINE
from tests.dynamodb.conftest import OpenDynamo

WRITERS, TURNS = 4, 10


def test_a_store_s_threads_appending_to_one_session_lose_no_race(
        open_dynamo: OpenDynamo) -> None:
    store = open_dynamo()
    session = store.session("shared")
    session.append([user("first")])  # the meta item is then remembered
    sent: list[str] = []
    call = store._backend.io.call  # type: ignore[attr-defined]

    def recorder(operation: str, **kwargs: Any) -> Any:
        sent.append(operation)
        return call(operation, **kwargs)

    store._backend.io.call = recorder  # type: ignore[attr-defined]

    def append(worker: int) -> None:
        for turn in range(TURNS):
            session.append([user(f"w{worker} t{turn}")])

    with ThreadPoolExecutor(WRITERS) as pool:
        for future in [pool.submit(append, w) for w in range(WRITERS)]:
            future.result(timeout=60)
    # One transaction per append, no meta read: no append met another's write.
    assert sent == ["transact_write_items"] * WRITERS * TURNS
    assert session.read().version == 1 + WRITERS * TURNS


def test_an_async_store_s_tasks_appending_to_one_session_lose_no_race(
        dynamodb_url: str, namespace: str) -> None:
    async def run() -> tuple[int, list[str]]:
        async with await open_async_store(dynamodb_url, namespace=namespace,
                                          retry=RetryPolicy.none()) as store:
            session = store.session("shared")
            await session.append([user("first")])
            sent: list[str] = []
            call = store._backend.io.call  # type: ignore[attr-defined]

            async def recorder(operation: str, **kwargs: Any) -> Any:
                sent.append(operation)
                return await call(operation, **kwargs)

            store._backend.io.call = recorder  # type: ignore[attr-defined]

            async def append(worker: int) -> None:
                for turn in range(TURNS):
                    await session.append([user(f"w{worker} t{turn}")])

            await asyncio.gather(*(append(w) for w in range(WRITERS)))
            appended = list(sent)
            return (await session.read()).version, appended

    version, sent = asyncio.run(run())
    assert version == 1 + WRITERS * TURNS
    assert sent == ["transact_write_items"] * WRITERS * TURNS


def test_sync_turns_go_in_order_of_arrival() -> None:
    turns, order = Turns(), []

    def wait_turn(worker: int) -> None:
        with turns.of("s", "here"):
            order.append(worker)

    with ThreadPoolExecutor(3) as pool:
        with turns.of("s", "here"):
            futures = []
            for worker in range(3):  # each queued before the next arrives
                futures.append(pool.submit(wait_turn, worker))
                _until(lambda queued=worker + 1: len(turns._waiting["s"]) == queued)
        for future in futures:
            future.result(timeout=10)
    assert order == [0, 1, 2]
    assert turns._waiting == {}  # nothing kept for a session nobody appends to


def test_a_sync_turn_not_given_by_the_call_s_deadline_is_unavailable() -> None:
    turns = Turns()
    failed: list[BaseException] = []

    def late() -> None:
        token = CALL_DEADLINE.set(time.monotonic() + 0.05)
        try:
            with turns.of("s", "here"):
                pass
        except BackendUnavailable as exc:
            failed.append(exc)
        finally:
            CALL_DEADLINE.reset(token)

    with turns.of("s", "here"):
        waiter = threading.Thread(target=late)
        waiter.start()
        waiter.join(timeout=10)
        assert len(failed) == 1 and "deadline" in str(failed[0])
        assert not turns._waiting["s"]  # the late one left the queue
    assert turns._waiting == {}


def test_an_async_turn_cancelled_while_waiting_leaves_nothing_behind() -> None:
    async def run() -> dict[str, Any]:
        turns = AsyncTurns()
        async with turns.of("s", "here"):
            waiter = asyncio.ensure_future(_enter(turns))
            await asyncio.sleep(0)  # let it queue
            waiter.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiter
        return turns._locks

    assert asyncio.run(run()) == {}


async def _enter(turns: AsyncTurns) -> None:
    async with turns.of("s", "here"):
        pass


def _until(condition: Any) -> None:
    """Wait (bounded) until ``condition()``: a thread has reached its queue."""
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "the thread never queued"
        time.sleep(0.001)
