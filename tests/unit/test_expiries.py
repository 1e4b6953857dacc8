"""Deadlines of async calls kept by shared timers (_expiries): cut off at the deadline,
never before it, and a cancellation the deadline did not make is left alone."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from chatledger import _expiries
from chatledger._expiries import GRAIN, Deadline, Overrun, bounded


def test_an_attempt_past_its_deadline_is_cut_off_at_it_not_before() -> None:
    async def main() -> tuple[float, float, int]:
        task = asyncio.current_task()
        assert task is not None
        deadline = time.monotonic() + 0.05
        with pytest.raises(Overrun):
            await bounded(asyncio.sleep(5), Deadline(deadline))
        return time.monotonic(), deadline, task.cancelling()

    ended, deadline, cancelling = asyncio.run(main())
    assert ended >= deadline  # never early; at most a grain late
    assert cancelling == 0  # the deadline's cancellation was taken back


def test_an_attempt_within_its_deadline_keeps_its_result_and_leaves_nothing_armed() -> None:
    async def main() -> tuple[str, set[int], int, int, bool]:
        loop = asyncio.get_running_loop()
        expiries = _expiries._expiries(loop)
        deadline = time.monotonic() + 0.02
        slots: set[int] = set()

        async def quick() -> str:
            slots.add(len(expiries._slots))
            return "done"

        timers = len(loop._scheduled)  # type: ignore[attr-defined]
        results = await asyncio.gather(*(bounded(quick(), Deadline(deadline))
                                          for _ in range(50)))
        armed = len(loop._scheduled) - timers  # type: ignore[attr-defined]
        left = len(expiries._slots)
        await asyncio.sleep(0.05)  # past the deadline: the shared timer fires on nothing
        return results[0], slots, armed, left, expiries._timer is None

    result, slots, armed, left, disarmed = asyncio.run(main())
    assert result == "done"
    assert slots == {1}  # fifty calls, one grain of deadlines: one slot
    assert armed == 1  # and one timer
    assert left == 0  # a slot goes with its last call, before its deadline
    assert disarmed  # the timer fired on nothing and armed no other


def test_one_timer_serves_every_slot_and_the_earliest_deadline_comes_first() -> None:
    async def main() -> tuple[list[str], int]:
        loop = asyncio.get_running_loop()
        expiries = _expiries._expiries(loop)
        ended: list[str] = []

        async def call(name: str, seconds: float) -> None:
            with pytest.raises(Overrun):
                await bounded(asyncio.sleep(5), Deadline(time.monotonic() + seconds))
            ended.append(name)

        later = asyncio.ensure_future(call("later", 0.06))
        await asyncio.sleep(0)
        sooner = asyncio.ensure_future(call("sooner", 0.02))  # armed before the later one
        await asyncio.sleep(0)
        armed = len([timer for timer in loop._scheduled  # type: ignore[attr-defined]
                     if not timer.cancelled() and timer._callback == expiries._expire])
        await asyncio.gather(later, sooner)
        return ended, armed

    ended, armed = asyncio.run(main())
    assert ended == ["sooner", "later"]  # the second slot came after the first fired
    assert armed == 1  # re-armed for the sooner slot, the later one's timer cancelled


def test_a_cancellation_the_deadline_did_not_make_stays_a_cancellation() -> None:
    async def main() -> bool:
        deadline = time.monotonic() + 5

        async def call() -> None:
            await bounded(asyncio.sleep(5), Deadline(deadline))

        task = asyncio.ensure_future(call())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return task.cancelled()

    assert asyncio.run(main())


def test_a_caller_cancelled_as_the_deadline_passes_is_still_cancelled() -> None:
    async def main() -> bool:
        deadline = time.monotonic() + GRAIN

        async def call() -> None:
            await bounded(asyncio.sleep(5), Deadline(deadline))

        task = asyncio.ensure_future(call())
        await asyncio.sleep(0)
        task.cancel()  # the caller's own request, counted before the deadline's
        await asyncio.sleep(2 * GRAIN)
        with pytest.raises(asyncio.CancelledError):
            await task
        return task.cancelled()

    assert asyncio.run(main())


def test_an_attempt_that_finishes_as_the_timer_fires_keeps_its_result() -> None:
    async def main() -> tuple[str, int]:
        task = asyncio.current_task()
        assert task is not None

        async def stubborn() -> str:
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                return "finished anyway"  # swallows the deadline's cancellation
            return "slept"

        result = await bounded(stubborn(), Deadline(time.monotonic() + 0.02))
        return result, task.cancelling()

    assert asyncio.run(main()) == ("finished anyway", 0)


def test_each_loop_has_its_own_timers() -> None:
    seen: list[object] = []

    def run_in_thread() -> None:
        async def main() -> None:
            with pytest.raises(Overrun):
                await bounded(asyncio.sleep(5), Deadline(time.monotonic() + 0.02))
            seen.append(_expiries._expiries(asyncio.get_running_loop()))

        asyncio.run(main())

    threads = [threading.Thread(target=run_in_thread) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(seen) == 2 and seen[0] is not seen[1]


def test_an_attempt_that_fails_as_the_timer_fires_keeps_its_error() -> None:
    async def main() -> int:
        task = asyncio.current_task()
        assert task is not None

        async def failing() -> None:
            try:
                await asyncio.sleep(5)
            except asyncio.CancelledError:
                raise ValueError("its own failure") from None

        with pytest.raises(ValueError, match="its own failure"):
            await bounded(failing(), Deadline(time.monotonic() + 0.02))
        return task.cancelling()

    assert asyncio.run(main()) == 0


def test_the_deadline_in_loop_time_is_never_before_it_however_the_clocks_are_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The deadline is turned into loop time from two clock reads; a clock that moves
    between them (here 5 ms a read) may only put the cut later, never earlier."""
    ticks = [1_000.0]

    def stepping() -> float:
        ticks[0] += 0.005
        return ticks[0]

    watched: list[float] = []

    class Recorded:
        def watch(self, watch: object, at: float) -> None:
            watched.append(at)

        def forget(self, watch: object) -> None:
            pass

    async def main() -> None:
        asyncio.get_running_loop().time = stepping  # type: ignore[method-assign]
        monkeypatch.setattr(time, "monotonic", stepping)
        monkeypatch.setattr(_expiries, "_expiries", lambda loop: Recorded())

        async def quick() -> str:
            return "done"

        assert await bounded(quick(), _expiries.Deadline(1_000.5)) == "done"

    asyncio.run(main())
    assert len(watched) == 1 and watched[0] >= 1_000.5
