"""Workers for the concurrency tests; a module of their own so spawned
processes can import them."""

from __future__ import annotations

import time
from typing import Any

from chatledger import ConflictError, assistant, open_store, user


def append_pairs(start: Any, worker: int, url: str, options: dict[str, Any], session: str,
                 pairs: int) -> list[tuple[int, int]]:
    """Append ``pairs`` user+assistant batches; return each Ack's (first, last)."""
    acks = []
    with open_store(url, **options) as store:
        ledger = store.session(session)
        start.wait(60)
        for turn in range(pairs):
            ack = ledger.append([user(f"w{worker} t{turn} q"), assistant(f"w{worker} t{turn} a")])
            acks.append((ack.first_seq, ack.last_seq))
    return acks


def race_versions(start: Any, worker: int, url: str, options: dict[str, Any], session: str,
                  target: int, seconds: float) -> tuple[list[int], list[tuple[int, int, int]]]:
    """Append with expect_version until the session reaches ``target``.

    Returns the versions this worker won, and for each conflict it saw the version it
    expected, and the expected and current versions the ConflictError reported.
    """
    won: list[int] = []
    conflicts: list[tuple[int, int, int]] = []
    deadline = time.monotonic() + seconds
    with open_store(url, **options) as store:
        ledger = store.session(session)
        start.wait(60)
        while time.monotonic() < deadline:
            version = ledger.read(last=0).version
            if version >= target:
                break
            try:
                ack = ledger.append([user(f"w{worker} v{version + 1}")], expect_version=version)
            except ConflictError as exc:
                conflicts.append((version, exc.expected, exc.current))
                continue
            assert ack.version == version + 1
            won.append(ack.version)
    return won, conflicts


def append_or_compact(start: Any, worker: int, url: str, options: dict[str, Any], session: str,
                      pairs: int, compactors: int) -> Any:
    """Workers below ``compactors`` compact the session while the others append;
    worker 0 also trims what its summaries cover. Every worker returns its
    Recorder's records, the compactions with what their summarizer was given."""
    from chatledger.testing import Recorder

    recorder = Recorder(worker)
    with open_store(url, **options) as store:
        ledger = store.session(session)
        start.wait(60)
        if worker >= compactors:
            for turn in range(pairs):
                recorder.append(ledger, [user(f"w{worker} t{turn} q"),
                                         assistant(f"w{worker} t{turn} a")])
            return recorder.records
        appended = (WORKERS_OF_COMPACTION - compactors) * pairs * 2
        # Bounded: when appenders fail, a compactor must not spin on past the test
        # (SpawnedWorkers.run gives up on a worker after 400 s and leaves it running).
        deadline = time.monotonic() + COMPACTING_SECONDS
        while time.monotonic() < deadline:
            done = ledger.read(last=0).version >= appended  # summaries count too: >= is enough
            ack = recorder.compact(ledger, lambda messages: f"w{worker}: {len(messages)} messages",
                                   trigger_tokens=120, keep_tokens=40)
            if worker == 0 and ack is not None:
                ledger.trim_summarized()
            if done:
                return recorder.records
        raise AssertionError(f"the appenders did not reach version {appended} "
                             f"in {COMPACTING_SECONDS} s")


WORKERS_OF_COMPACTION = 8
COMPACTING_SECONDS = 300
