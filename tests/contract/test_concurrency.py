"""Many writers on one session: batches stay whole, nothing is lost or doubled,
and ``expect_version`` elects exactly one winner per version.

Backends that can be shared across processes are hammered by processes; the
in-process memory backend by threads.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from chatledger import RetryPolicy, Store, assistant, user
from tests.backends import BackendCase
from tests.contract import _workers
from tests.spawned import WORKERS, SpawnedWorkers

PAIRS = 200


def _run_all(backend: BackendCase, workers: SpawnedWorkers, job: Callable[..., Any],
             *args: Any) -> list[Any]:
    """Run ``job(start, worker, url, options, session, *rest)`` in every worker at once:
    the session's spawned processes, or threads for the in-process memory backend.

    ``start`` is a barrier, so that no worker finishes before the others begin.
    """
    if backend.multiprocess:
        return workers.run(job, *args)
    start = threading.Barrier(WORKERS)
    with ThreadPoolExecutor(WORKERS) as pool:
        futures = [pool.submit(job, start, worker, *args) for worker in range(WORKERS)]
        return [future.result(timeout=120) for future in futures]


# Contention is part of the test, and a loaded machine makes each attempt slower, not
# the ledger weaker: the workers' retries (each safe, with the same ids) are bounded by
# their count, never by a clock, so the proof holds whatever the machine's load (the
# default 10 s deadline gave up on DynamoDB at load 15 and more).
CONTENDED = RetryPolicy(attempts=400, backoff=0.01, max_backoff=0.25, deadline=24 * 3600.0)


def _worker_options(store: Store) -> dict[str, Any]:
    return {"namespace": store.namespace, "timeout": store.options.timeout,
            "retry": CONTENDED}


@pytest.mark.slow
def test_concurrent_pair_appends_stay_whole(backend: BackendCase, ledger_url: str, store: Store,
                                            spawned_workers: SpawnedWorkers) -> None:
    pairs = min(PAIRS, backend.concurrent_pairs)
    results = _run_all(backend, spawned_workers, _workers.append_pairs, ledger_url,
                       _worker_options(store), "shared", pairs)
    history = store.session("shared").read()
    texts = [m.text for m in history]
    assert len(texts) == WORKERS * pairs * 2 == history.version
    assert len({m.id for m in history}) == len(texts), "duplicated messages"
    for seq in range(0, len(texts), 2):  # every pair adjacent, question first
        assert texts[seq].endswith(" q") and texts[seq + 1] == texts[seq][:-1] + "a"
    for worker, acks in enumerate(results):
        mine = [t for t in texts if t.startswith(f"w{worker} ") and t.endswith("q")]
        assert mine == [f"w{worker} t{turn} q" for turn in range(pairs)], "order not kept"
        for turn, (first, last) in enumerate(acks):
            assert last == first + 1
            assert texts[first - 1] == f"w{worker} t{turn} q"


@pytest.mark.slow
def test_expect_version_elects_one_winner_per_version(
        backend: BackendCase, ledger_url: str, store: Store,
        spawned_workers: SpawnedWorkers) -> None:
    target = backend.raced_versions
    results = _run_all(backend, spawned_workers, _workers.race_versions, ledger_url,
                       _worker_options(store), "race", target, 60.0)
    wins = Counter(v for won, _ in results for v in won)
    assert sorted(wins) == list(range(1, target + 1))
    assert set(wins.values()) == {1}, "a version had two winners"
    # Whether the workers collided at all is up to the scheduler; what a collision
    # reports is the ledger's promise: the version expected, and a newer current one.
    for _, conflicts in results:
        for expected, reported_expected, current in conflicts:
            assert reported_expected == expected
            assert expected < current <= target
    history = store.session("race").read()
    assert history.version == target
    winners = {v: w for w, (won, _) in enumerate(results) for v in won}
    assert [m.text for m in history] == [f"w{winners[v]} v{v}" for v in range(1, target + 1)]


def test_trimming_while_others_append_never_drops_their_messages(store: Store) -> None:
    """Trim cuts below a version it reads atomically: appends racing it stay whole."""
    session = store.session("trimmed")
    acks: list[tuple[int, str]] = []
    lock = threading.Lock()

    def append(worker: int) -> None:
        for turn in range(40):
            text = f"w{worker} t{turn}"
            ack = session.append([user(text + " q"), assistant(text + " a")])
            with lock:
                acks.append((ack.first_seq, text))

    def trim() -> None:
        for _ in range(40):
            session.trim(keep_last=6)

    with ThreadPoolExecutor(5) as pool:
        for future in [pool.submit(append, w) for w in range(4)] + [pool.submit(trim)]:
            future.result(timeout=60)
    history = session.read()
    assert history.version == 4 * 40 * 2
    assert [m.seq for m in history] == list(range(history.first_seq, history.version + 1))
    kept = {m.seq: m.text for m in history}
    for first_seq, text in acks:  # whatever is above the last cut is there, whole
        if first_seq >= history.first_seq:
            assert (kept[first_seq], kept[first_seq + 1]) == (text + " q", text + " a")
    assert history.version - history.first_seq + 1 >= 6
