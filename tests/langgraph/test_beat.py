"""A lease's heartbeat renews until its block ends, stops once the lease is lost,
and beats on through a store that failed once."""

from __future__ import annotations

import asyncio
import threading

from chatledger import BackendUnavailable
from chatledger.langgraph._beat import AsyncBeat, Beat


class Renewals:
    """Answers from a script: True (renewed), False (lost), or raises BackendUnavailable."""

    def __init__(self, *answers: bool | None) -> None:
        self.answers = list(answers)
        self.calls = 0
        self.done = threading.Event()

    def __call__(self) -> bool:
        self.calls += 1
        answer = self.answers.pop(0)
        if not self.answers:
            self.done.set()
        if answer is None:
            raise BackendUnavailable("the store is down")
        return answer


def test_a_beat_renews_through_a_failure_and_stops_when_the_lease_is_lost() -> None:
    renewals = Renewals(True, None, False)
    with Beat(0.001, renewals):
        assert renewals.done.wait(timeout=60)
    assert renewals.calls == 3  # not a fourth: the lease was lost


def test_an_async_beat_does_the_same() -> None:
    renewals = Renewals(True, None, False)

    async def renew() -> bool:
        return renewals()

    async def beating() -> None:
        async with AsyncBeat(0.001, renew):
            while not renewals.done.is_set():
                await asyncio.sleep(0.001)
            await asyncio.sleep(0.01)  # a beat after the last answer would find none

    asyncio.run(beating())
    assert renewals.calls == 3
