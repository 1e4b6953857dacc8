"""The async store never blocks the event loop, even while another process holds the lock.

A ticker coroutine wakes every 10 ms and records the longest gap between two
wakeups: a property of the loop, whatever the store does. Another process
holds SQLite's write lock while the store opens (its schema needs the lock)
and while it appends; a thread releases it after HELD seconds, so a store
that blocked the loop would still finish, and show a gap that long.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chatledger import RetryPolicy, open_async_store, user

HELD = 1.5  # seconds the other process holds the lock each time
TICK = 0.01
# Far below HELD: the loop went on ticking while the store waited. Not much
# lower: on a loaded machine the loop's thread itself may wait for a core.
MAX_GAP = 0.5

# The other process: "hold" takes the write lock, "release" lets it go; it
# answers each line once done, so the test knows the lock is held.
_HOLDER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
if sys.argv[2] == "wal":
    db.execute("PRAGMA journal_mode = WAL")
for line in sys.stdin:
    db.execute("BEGIN IMMEDIATE" if line.strip() == "hold" else "ROLLBACK")
    print(line.strip(), flush=True)
"""


class Holder:
    """A process that holds the database's write lock on request."""

    def __init__(self, path: Path, journal: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(path), journal],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self._lock = threading.Lock()

    def tell(self, command: str) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        with self._lock:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
            assert self.process.stdout.readline().strip() == command

    def hold_for(self, seconds: float) -> None:
        """Take the lock now; a thread lets it go after ``seconds``, whatever the loop does."""
        self.tell("hold")
        threading.Timer(seconds, self.tell, ("release",)).start()

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)


@pytest.fixture(params=["rollback-journal", "wal"])
def holder(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Holder]:
    """A new file without tables: a rollback-journal one fails the switch to WAL at
    once (the store retries, pausing), a WAL one makes the schema wait in SQLite's
    busy handler."""
    holder = Holder(tmp_path / "held.db", "wal" if request.param == "wal" else "delete")
    yield holder
    holder.stop()


class Ticker:
    """Wakes every TICK seconds and remembers the longest time between two wakeups."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Ticker:
        self._task = asyncio.create_task(self._run())
        await asyncio.sleep(0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()

    async def _run(self) -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(TICK)
            now = time.monotonic()
            self.longest = max(self.longest, now - last)
            last = now


def test_opening_and_appending_under_another_process_s_lock_never_block_the_loop(
    holder: Holder, tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'held.db'}"
    retry = RetryPolicy(attempts=1000, backoff=0.05, max_backoff=0.1, deadline=30)

    async def main() -> tuple[float, float, float]:
        async with Ticker() as ticker:
            await asyncio.to_thread(holder.hold_for, HELD)  # the test's own waits: off the loop
            started = time.monotonic()
            store = await open_async_store(url, timeout=0.2, retry=retry)
            opening = time.monotonic() - started
            await asyncio.to_thread(holder.hold_for, HELD)
            started = time.monotonic()
            async with store:
                assert (await store.session("s").append([user("hi")])).version == 1
            appending = time.monotonic() - started
            return opening, appending, ticker.longest

    opening, appending, longest = asyncio.run(main())
    assert opening >= HELD * 0.9 and appending >= HELD * 0.9  # both waited for the lock
    assert longest < MAX_GAP, f"the event loop was blocked for {longest:.2f} s"
