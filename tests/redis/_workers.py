"""Worker processes for the concurrency tests; importable by spawned processes."""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

from chatledger import BackendUnavailable, RetryPolicy, assistant, open_store, user
from chatledger.testing import Recorder


def append_pairs(start: Any, worker: int, url: str, namespace: str,
                 pairs: int) -> list[tuple[int, int]]:
    """Append user+assistant pairs through a flaky network, once every worker is ready.

    Returns the Ack (first, last) of each pair, or (0, 0) when the store gave up:
    then the pair may or may not be stored, but never twice.
    """
    policy = RetryPolicy(attempts=20, backoff=0.005, max_backoff=0.05, deadline=5.0)
    outcomes = []
    with open_store(url, namespace=namespace, retry=policy, timeout=2.0) as store:
        session = store.session("shared")
        start.wait()
        for turn in range(pairs):
            batch = [user(f"w{worker} t{turn} q"), assistant(f"w{worker} t{turn} a")]
            try:
                ack = session.append(batch)
            except BackendUnavailable:
                outcomes.append((0, 0))
            else:
                outcomes.append((ack.first_seq, ack.last_seq))
    return outcomes


THINK = 0.01  # seconds between a writer's turns: a chat's pace, and CPU left for the servers
MAX_TURNS = 3000  # a bound should the stop file never come


def append_until_stopped(worker: int, recorder: Recorder, url: str, namespace: str,
                         sessions: list[str], stop_file: str, deadline: float,
                         options: dict[str, Any]) -> None:
    """Append user+assistant pairs round ``sessions`` until ``stop_file`` exists.

    Each append gives up after ``deadline`` seconds, shorter than a failover,
    so appends caught in one end indeterminate (recorded so): the test
    retries them later with the same ids.
    """
    policy = RetryPolicy(attempts=1000, backoff=0.02, max_backoff=0.2, deadline=deadline)
    with open_store(url, namespace=namespace, retry=policy, **options) as store:
        for turn in range(MAX_TURNS):
            if os.path.exists(stop_file):
                return
            session = store.session(sessions[(worker * 3 + turn) % len(sessions)])
            with contextlib.suppress(BackendUnavailable):  # recorded as indeterminate
                recorder.append(session, [user(f"w{worker} t{turn} q"),
                                          assistant(f"w{worker} t{turn} a")])
            time.sleep(THINK)
