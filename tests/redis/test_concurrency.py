"""Many processes appending pairs to one session: first on a clean network, then
through a proxy that resets connections at random (fewer operations, same checks)."""

from __future__ import annotations

from collections import Counter

import pytest

from chatledger import Store
from chatledger.testing._proxy import FaultProxy
from chatledger.testing._redis_server import RedisServer
from tests.redis import _workers
from tests.redis.conftest import OpenRedis
from tests.spawned import WORKERS, SpawnedWorkers

Outcomes = list[list[tuple[int, int]]]


@pytest.mark.slow
def test_concurrent_pairs_stay_whole_and_in_order(open_redis: OpenRedis, redis_url: str,
                                                  spawned_workers: SpawnedWorkers) -> None:
    store = open_redis()
    outcomes = spawned_workers.run(_workers.append_pairs, redis_url, store.namespace, 200)
    assert _check_history(store, outcomes) == WORKERS * 200
    assert store.session("shared").read(last=0).version == 3200


@pytest.mark.slow
def test_random_resets_lose_and_double_nothing(open_redis: OpenRedis, redis_server: RedisServer,
                                               spawned_workers: SpawnedWorkers) -> None:
    store = open_redis()
    with FaultProxy(redis_server.host, redis_server.port) as proxy:
        proxy.reset_randomly(0.03, seed=7)
        outcomes = spawned_workers.run(_workers.append_pairs, f"redis://{proxy.url_netloc}/0",
                                       store.namespace, 50)
        faults = proxy.faults_injected
    assert faults > 5, "the proxy hardly reset a connection"
    assert _check_history(store, outcomes) > WORKERS * 50 // 2


def _check_history(store: Store, outcomes: Outcomes) -> int:
    """Check the stored session against what the workers were told; count the acks."""
    history = store.session("shared").read()
    texts = [m.text for m in history]
    assert len(texts) == history.version
    assert not [t for t, n in Counter(texts).items() if n > 1], "a message was stored twice"
    assert len({m.id for m in history}) == len(texts)
    for seq in range(0, len(texts), 2):  # batches whole: every question right before its answer
        assert texts[seq].endswith(" q") and texts[seq + 1] == texts[seq][:-1] + "a"
    acknowledged = 0
    for worker, acks in enumerate(outcomes):
        mine = [t for t in texts if t.startswith(f"w{worker} ") and t.endswith(" q")]
        turns = [int(t.split()[1][1:]) for t in mine]
        assert turns == sorted(turns), f"worker {worker}'s order was not kept"
        for turn, (first, last) in enumerate(acks):
            if first:  # acknowledged: stored once, where the Ack says
                acknowledged += 1
                assert texts[first - 1 : last] == [f"w{worker} t{turn} q", f"w{worker} t{turn} a"]
    return acknowledged
