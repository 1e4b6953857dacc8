"""A primary dies while writers append: what was acknowledged survives, with ``wait_replicas``.

Over loopback replication is instant, so a failover loses nothing whatever the
client does, unless replication is stalled first: the dying primary's replica
is paused and its link cut, four writer processes keep appending, then the
primary is killed and the replica resumed, to be promoted without what it
missed. With ``wait_replicas=1`` those appends are never acknowledged (WAIT
finds no replica). Without it they are acknowledged and lost; that test
reports how many and only demands what must hold either way: no duplicate, no
torn batch.

Each writer's append gives up after 1.5 s, shorter than the failover, so the
appends caught in it end indeterminate; once the old primary is back (empty,
as the new primary's replica) the test retries each with the same ids, and
``check_history`` finds it stored exactly once, having been there once or
not at all before (see ``_failover``).

Each test builds its own cluster, as it kills a node.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from chatledger import open_store, user
from chatledger.testing._cluster import RedisCluster
from tests.redis._failover import PATIENT, Audit, Writers, audit, wait_for_writes

SESSIONS = [f"chat-{i}" for i in range(12)]  # over every shard
NAMESPACE = "failover"
DEADLINE = 1.5  # a writer's append gives up after this: the failover takes longer
STALLED_BYTES = 4000  # replication stream the paused replica misses
WITH_WAIT = {"wait_replicas": 1, "wait_timeout": 0.2, "timeout": 0.5}
WITHOUT_WAIT = {"timeout": 0.5}


@pytest.fixture
def cluster() -> Iterator[RedisCluster]:
    with RedisCluster() as fresh:
        yield fresh


def _seed(url: str) -> None:
    """Every session exists on a replica before any fault: a loss is of appends only."""
    with open_store(url, namespace=NAMESPACE, retry=PATIENT, **WITH_WAIT) as store:
        for session in SESSIONS:
            store.session(session).append([user(f"{session} opens")])


def _fail_over_while_appending(cluster: RedisCluster, tmp_path: Path,
                               options: dict[str, Any]) -> Audit:
    """Writers run; the primary of the first session stalls its replication and dies."""
    _seed(cluster.url)
    with open_store(cluster.url, namespace=NAMESPACE) as probe:
        keys = probe._backend.calls.keys(SESSIONS[0])
    old = cluster.owner(cluster.slot_of(keys.meta))
    with Writers(tmp_path, cluster.url, NAMESPACE, SESSIONS, deadline=DEADLINE,
                 options=options) as writers:
        wait_for_writes(old, 10_000, "the writers to get going")
        paused = cluster.stall_replication(old)
        wait_for_writes(old, STALLED_BYTES, "appends that no replica sees")
        old.kill()
        for replica in paused:
            replica.resume()
        new = cluster.wait_for_failover(old)
        old.restart(empty=True)  # comes back as the new primary's replica
        cluster.wait_until_healthy(timeout=30)
        wait_for_writes(new, 10_000, "appends after the failover")
        run = writers.stop()
    return audit(cluster.url, NAMESPACE, SESSIONS, run, options)


@pytest.mark.slow
def test_with_wait_replicas_no_acknowledged_append_is_lost(
    cluster: RedisCluster, tmp_path: Path, record_property: Callable[[str, object], None],
) -> None:
    result = _fail_over_while_appending(cluster, tmp_path, WITH_WAIT)
    print(f"\nCluster failover, wait_replicas=1: {result.summary()}")
    record_property("appends_lost", result.before.figures.appends_lost)
    result.assert_nothing_lost()


@pytest.mark.slow
def test_without_wait_the_loss_is_reported_never_a_duplicate(
    cluster: RedisCluster, tmp_path: Path, record_property: Callable[[str, object], None],
) -> None:
    result = _fail_over_while_appending(cluster, tmp_path, WITHOUT_WAIT)
    # Documented, not demanded: what a failover costs without WAIT.
    print(f"\nCluster failover, no wait_replicas: {result.summary()}")
    record_property("appends_lost", result.before.figures.appends_lost)
    result.assert_never_doubled()
