"""``redis+sentinel://``: configuration, and failovers on a real private Sentinel group."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from chatledger import (
    BackendUnavailable,
    ConfigError,
    RetryPolicy,
    assistant,
    open_async_store,
    open_store,
    user,
)
from chatledger._backends.redis.config import sentinel_settings
from chatledger._backends.redis.failover import MASTER_CHECK
from chatledger._options import StoreOptions
from chatledger._url import parse_url
from chatledger.testing import RedisServer
from chatledger.testing._sentinel import SentinelGroup, _without_replicaof
from tests.redis.conftest import OpenRedis

# Long enough for the sentinels to notice (0.4 s), agree and promote the replica.
THROUGH_FAILOVER = RetryPolicy(attempts=200, backoff=0.05, max_backoff=0.3, deadline=30)


def _settings(url: str, **extra: Any) -> Any:
    parsed = parse_url(url)
    return sentinel_settings(parsed, StoreOptions(), {**parsed.query, **extra})


def test_the_url_names_sentinels_service_and_database() -> None:
    settings = _settings("redis+sentinel://app:pw@s1:26380,s2/cache/3", sentinel_password="sp")
    assert settings.sentinels == [("s1", 26380), ("s2", 26379)]
    assert settings.service == "cache"
    master = settings.master.connection
    assert (master["db"], master["username"], master["password"]) == (3, "app", "pw")
    assert settings.sentinel["password"] == "sp"
    assert _settings("redis+sentinel://s1/cache?db=2").master.connection["db"] == 2
    # The sentinels are asked in turn: together they take one attempt's timeout.
    assert settings.sentinel["socket_timeout"] == StoreOptions().timeout / 2


@pytest.mark.parametrize(
    ("url", "message"),
    [("redis+sentinel://s1:26379", "must name its sentinels and the master's service"),
     ("redis+sentinel:///mymaster", "must name its sentinels"),
     ("redis+sentinel://s1/mymaster/x", "not a database number"),
     ("redis+sentinel://s1/mymaster?ssl_certfile=c.pem", "unknown option 'ssl_certfile'")],
)
def test_bad_sentinel_urls_are_config_errors(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        open_store(url)


@pytest.fixture
def group() -> Iterator[SentinelGroup]:
    """A group of this test's own: it is about to lose its master."""
    with SentinelGroup() as sentinel_group:
        yield sentinel_group


def test_a_killed_master_is_followed_to_the_promoted_replica(group: SentinelGroup,
                                                             open_redis: OpenRedis) -> None:
    # wait_replicas=1: an acknowledged append is on the replica before the Ack.
    confirmed = open_redis(group.url, wait_replicas=1, wait_timeout=1.0)
    acks = [confirmed.session("s").append([user(f"q{i}"), assistant(f"a{i}")])
            for i in range(3)]
    old = group.master
    old.kill()
    # The promoted replica has no replica of its own: this append cannot wait for one.
    store = open_redis(group.url, namespace=confirmed.namespace, retry=THROUGH_FAILOVER)
    during = store.session("s").append([user("q3"), assistant("a3")])  # retried through it
    new = group.wait_for_failover(old)
    assert (new.host, new.port) != (old.host, old.port)
    history = store.session("s").read(min_version=acks[-1].version)  # nothing acknowledged lost
    assert [m.text for m in history] == [t for i in range(4) for t in (f"q{i}", f"a{i}")]
    assert during.first_seq == 7
    group.rejoin(old)  # back, empty, as the new master's replica: writes are confirmed again
    again = open_redis(group.url, namespace=store.namespace, wait_replicas=1, wait_timeout=1.0,
                       retry=THROUGH_FAILOVER)
    assert again.session("s").append([user("q4")]).version == 9
    assert group.replicas_of(new) == [old]


def test_with_every_sentinel_down_the_store_is_unavailable(group: SentinelGroup,
                                                           open_redis: OpenRedis) -> None:
    store = open_redis(group.url, timeout=0.3)
    store.session("s").append([user("x")])
    store.close()
    for sentinel in group.sentinels:
        sentinel.kill()
    fresh = open_redis(group.url, timeout=0.3)
    with pytest.raises(BackendUnavailable, match=r"MasterNotFoundError|No master found"):
        fresh.session("s").read()


def test_async_follows_the_master_too(group: SentinelGroup, namespace: str) -> None:
    async def main() -> list[str]:
        async with await open_async_store(group.url, namespace=namespace,
                                          retry=THROUGH_FAILOVER) as store:
            await store.session("s").append([user("before")])
            old = group.master
            old.kill()
            await store.session("s").append([user("during")])
            group.wait_for_failover(old)
            return [m.text for m in await store.session("s").read()]

    texts = asyncio.run(main())
    assert texts[-1] == "during"
    assert texts.count("during") == 1


def test_an_old_master_coming_back_gets_no_acknowledged_writes(group: SentinelGroup,
                                                               open_redis: OpenRedis) -> None:
    """The pooled connection to the old master must not be reused once it is demoted."""
    store = open_redis(group.url, retry=THROUGH_FAILOVER)
    store.session("s").append([user("before")])  # the pool now holds a link to the master
    old = group.master
    old.pause()
    group.wait_for_failover(old)
    old.resume()  # back, and for a moment still sure it is the master
    acks = []
    for turn in range(4):
        time.sleep(MASTER_CHECK + 0.1)  # calls spaced like a chat's turns
        acks.append(store.session("s").append([user(f"after {turn}")]))
    _wait_until_demoted(old)
    fresh = open_redis(group.url, namespace=store.namespace)
    history = fresh.session("s").read(min_version=acks[-1].version)
    assert [m.text for m in history] == ["before", *(f"after {t}" for t in range(4))]


def _wait_until_demoted(old: RedisServer) -> None:
    """Poll the old master until the sentinels have made it a replica (its data goes).

    Demoting it ends with ``CLIENT KILL TYPE normal``, which may reset the very
    connection that asks, so a reset is one more poll, not a failure.
    """
    deadline = time.monotonic() + 20
    while True:
        try:
            if b"role:slave" in old.info("replication"):
                return
        except ConnectionError:
            pass
        assert time.monotonic() < deadline, "the old master was never demoted"
        time.sleep(0.05)


def test_only_a_proxied_group_can_cut_its_master_off() -> None:
    with pytest.raises(RuntimeError, match="no proxy: make it with proxied=True"):
        SentinelGroup().cut_off_master()  # unstarted: the check needs no server


def test_a_rejoining_server_drops_its_old_replicaof() -> None:
    arguments = ("--save", "", "--replicaof", "127.0.0.1", "7001", "--port", "7002")
    assert _without_replicaof(arguments) == ("--save", "", "--port", "7002")
    assert _without_replicaof(("--save", "")) == ("--save", "")
