"""SentinelGroup at its smallest: one master and one sentinel, no failover possible."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chatledger.testing._sentinel import SentinelGroup


@pytest.fixture
def group() -> Iterator[SentinelGroup]:
    with SentinelGroup(replicas=0, sentinels=1) as lone:
        yield lone


def test_the_group_names_its_sentinels_and_its_master(group: SentinelGroup) -> None:
    (sentinel,) = group.sentinels
    assert group.url == f"redis+sentinel://127.0.0.1:{sentinel.port}/mymaster"
    assert group.master is group.servers[0]
    assert sentinel.master() == (group.servers[0].host, group.servers[0].port)


def test_a_failover_that_never_comes_is_waited_for_in_vain(group: SentinelGroup) -> None:
    with pytest.raises(RuntimeError, match="waited in vain for a failover"):
        group.wait_for_failover(group.master, timeout=0.2)


def test_a_sentinel_that_knows_no_master_is_asked_again_until_the_wait_ends(
    group: SentinelGroup,
) -> None:
    (sentinel,) = group.sentinels
    old = group.master
    sentinel.service = "unwatched"  # the sentinel is asked about a service it never saw
    with pytest.raises(RuntimeError, match="knows no master"):
        sentinel.master()
    with pytest.raises(RuntimeError, match="waited in vain for a failover"):
        group.wait_for_failover(old, timeout=0.2)
