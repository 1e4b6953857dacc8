"""Worker processes for the concurrency tests; importable by spawned processes."""

from __future__ import annotations

from chatledger import BackendUnavailable, RetryPolicy, assistant, open_store, user


def append_pairs(url: str, namespace: str, worker: int, pairs: int) -> list[tuple[int, int]]:
    """Append user+assistant pairs through a flaky network.

    Returns the Ack (first, last) of each pair, or (0, 0) when the store gave up:
    then the pair may or may not be stored, but never twice.
    """
    policy = RetryPolicy(attempts=20, backoff=0.005, max_backoff=0.05, deadline=5.0)
    outcomes = []
    with open_store(url, namespace=namespace, retry=policy, timeout=2.0) as store:
        session = store.session("shared")
        for turn in range(pairs):
            batch = [user(f"w{worker} t{turn} q"), assistant(f"w{worker} t{turn} a")]
            try:
                ack = session.append(batch)
            except BackendUnavailable:
                outcomes.append((0, 0))
            else:
                outcomes.append((ack.first_seq, ack.last_seq))
    return outcomes
