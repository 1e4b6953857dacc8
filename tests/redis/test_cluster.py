"""``redis+cluster://``: configuration, routing, redirects and WAIT on a real private cluster.

The contract suite runs on the cluster too (``tests/backends.py``); these are
the things only a cluster has. Failovers, which kill nodes, are in
``test_cluster_failover.py``, each on a cluster of its own.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis

from chatledger import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    RetryPolicy,
    assistant,
    open_async_store,
    open_store,
    user,
)
from chatledger._backends.redis.calls import Replication
from chatledger._backends.redis.config import cluster_settings
from chatledger._backends.redis.keys import SessionKeys
from chatledger._doctor import diagnose
from chatledger._options import StoreOptions
from chatledger._url import parse_url
from chatledger.testing._cluster import RedisCluster
from chatledger.testing._redis_server import RedisServer
from tests.redis.conftest import OpenRedis


@pytest.fixture
def open_cluster(cluster_url: str, open_redis: OpenRedis) -> OpenRedis:
    def open_(**options: Any) -> Any:
        return open_redis(cluster_url, **options)
    return open_


def _settings(url: str, **extra: Any) -> Any:
    parsed = parse_url(url)
    return cluster_settings(parsed, StoreOptions(), {**parsed.query, **extra})


def _node_id(node: RedisServer) -> bytes:
    reply = node.command("CLUSTER", "MYID")
    assert isinstance(reply, bytes)
    return reply


def _slot(store: Any, session: str) -> int:
    return int(redis.crc.key_slot(SessionKeys.of(store.namespace, session).meta))


def _in_an_empty_slot(store: Any, cluster: RedisCluster, stem: str) -> tuple[str, int]:
    """A session id whose slot holds no key yet: the cluster is shared by the
    worker's tests, and Redis refuses to hand over a slot that still has keys."""
    for n in range(1000):
        session = f"{stem}-{n}"
        slot = _slot(store, session)
        if cluster.owner(slot).command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0:
            return session, slot
    raise AssertionError("no empty slot found in 1000 tries")


def test_the_url_names_nodes_credentials_and_tls() -> None:
    settings = _settings("redis+cluster://app:pw@n1:7000,n2")
    assert settings.nodes == [("n1", 7000), ("n2", 6379)]
    connection = settings.node.connection
    assert (connection["username"], connection["password"]) == ("app", "pw")
    assert "db" not in connection and settings.node.transport == "tcp"
    tls = _settings("rediss+cluster://n1:7000?ssl_cert_reqs=none")
    assert (tls.node.transport, tls.node.connection["ssl_cert_reqs"]) == ("tls", "none")
    assert _settings("redis+cluster://n1?wait_replicas=1").node.replication.replicas == 1


@pytest.mark.parametrize(
    ("url", "message"),
    [("redis+cluster:///", "must name one or more nodes"),
     ("redis+cluster://n1:7000/3", "no database"),
     ("redis+cluster://n1:7000?db=0", "unknown option 'db'"),
     ("redis+cluster://n1:7000?ssl_ca_certs=ca.pem", "needs a rediss\\+cluster:// URL")],
)
def test_bad_cluster_urls_are_config_errors(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        open_store(url)


def test_sessions_spread_over_every_primary_and_are_listed_from_all(
    open_cluster: OpenRedis, redis_cluster: RedisCluster
) -> None:
    store = open_cluster()
    ids = [f"s{i}" for i in range(40)]
    for session in ids:
        store.session(session).append([user(session)])
    owners = {redis_cluster.owner(_slot(store, session)).port for session in ids}
    assert len(owners) == 3  # 40 sessions: every primary holds some
    assert sorted(store.sessions()) == sorted(ids)
    assert store.purge("s1") == 11
    assert len(list(store.sessions())) == 29


def test_a_bad_sessions_cursor_is_an_error(open_cluster: OpenRedis) -> None:
    store = open_cluster()
    with pytest.raises(BackendError, match="not a Redis Cluster session cursor"):
        store._backend.list_sessions("", "nope")
    assert store._backend.list_sessions("", "99:0").ids == []  # past the last primary


def test_wait_runs_on_the_owner_so_its_replica_already_has_the_write(
    open_cluster: OpenRedis, redis_cluster: RedisCluster
) -> None:
    store = open_cluster(wait_replicas=1, wait_timeout=1.5)
    store.session("kept").append([user("q"), assistant("a")])
    owner = redis_cluster.owner(_slot(store, "kept"))
    (replica,) = redis_cluster.replicas_of(owner)
    reader = redis.Redis(port=replica.port)
    try:
        reader.execute_command("READONLY")  # on this connection, the replica answers reads
        log = SessionKeys.of(store.namespace, "kept").log
        assert reader.llen(log) == 2  # confirmed means there: no polling
    finally:
        reader.close()


def test_a_short_count_is_indeterminate_and_the_same_ids_are_stored_once(
    open_cluster: OpenRedis, redis_cluster: RedisCluster
) -> None:
    store = open_cluster(wait_replicas=1, wait_timeout=0.2)
    batch = [user("q"), assistant("a")]
    (replica,) = redis_cluster.replicas_of(redis_cluster.owner(_slot(store, "short")))
    replica.pause()
    try:
        with pytest.raises(BackendUnavailable,
                           match=r"0 of 1 replicas .* may or may not have been kept.* is safe"):
            store.session("short").append(batch)
    finally:
        replica.resume()
    patient = open_cluster(wait_replicas=1, wait_timeout=1.5, retry=RetryPolicy(deadline=10))
    ack = patient.session("short").append(batch)
    assert (ack.first_seq, ack.last_seq, ack.deduplicated) == (1, 2, True)
    assert [m.id for m in patient.session("short").read()] == [m.id for m in batch]


def test_waitaof_is_detected_at_connect_and_absent_on_this_server(
    open_cluster: OpenRedis, redis_cluster: RedisCluster
) -> None:
    store = open_cluster(wait_replicas=1, wait_timeout=1.5)
    store.session("d").append([user("x")])
    version = redis_cluster.nodes[0].info("server")
    confirmations = {address: node.confirmation for address, node
                     in store._backend._nodes.items() if node.confirmation}
    assert confirmations  # detected on the first write to the node
    has_waitaof = b"redis_version:7.0" not in version and b"redis_version:6" not in version
    assert all(found.waitaof is False for found in confirmations.values()) or has_waitaof


def test_waitaof_asks_for_a_local_fsync_and_the_replicas() -> None:
    waitaof = Replication(replicas=2, timeout_ms=500, waitaof=True)
    assert waitaof.commands == (("WAITAOF", 1, 0, 500), ("WAIT", 2, 500))
    assert waitaof.confirmed([[1, 0], 2]) == 2
    assert waitaof.confirmed([[0, 0], 2]) == 0  # not even on the primary's disk yet
    assert Replication(replicas=1, timeout_ms=500).commands == (("WAIT", 1, 500),)


def test_moved_is_followed_to_the_slot_s_new_owner(
    open_cluster: OpenRedis, redis_cluster: RedisCluster
) -> None:
    store = open_cluster(retry=RetryPolicy.none())
    store.session("warm").append([user("the map is known now")])
    moving, slot = _in_an_empty_slot(store, redis_cluster, "moving")
    old = redis_cluster.owner(slot)
    new = next(node for node in redis_cluster.primaries if node is not old)
    for node in redis_cluster.primaries:  # an empty slot changes hands at once
        node.command("CLUSTER", "SETSLOT", slot, "NODE", _node_id(new))
    ack = store.session(moving).append([user("lands on the new owner")])
    assert ack.version == 1
    assert redis_cluster.owner(slot) is new
    assert new.command("EXISTS", SessionKeys.of(store.namespace, moving).meta) == 1


def test_a_migrating_slot_is_unavailable_until_the_move_is_done(
    open_cluster: OpenRedis, redis_cluster: RedisCluster
) -> None:
    store = open_cluster(retry=RetryPolicy.none())
    store.session("warm").append([user("the map is known now")])
    migrating, slot = _in_an_empty_slot(store, redis_cluster, "migrating")
    source = redis_cluster.owner(slot)
    target = next(node for node in redis_cluster.primaries if node is not source)
    target.command("CLUSTER", "SETSLOT", slot, "IMPORTING", _node_id(source))
    source.command("CLUSTER", "SETSLOT", slot, "MIGRATING", _node_id(target))
    try:
        # Redis answers a script on keys it does not hold with TRYAGAIN (or ASK).
        with pytest.raises(BackendUnavailable, match=r"TRYAGAIN|TryAgain|ASK"):
            store.session(migrating).append([user("not yet")])
    finally:
        for node in redis_cluster.primaries:  # finish the move
            node.command("CLUSTER", "SETSLOT", slot, "NODE", _node_id(target))
    store.session(migrating).append([user("after the move")])  # MOVED, followed
    meta = SessionKeys.of(store.namespace, migrating).meta
    assert target.command("EXISTS", meta) == 1
    assert [m.text for m in store.session(migrating).read()] == ["after the move"]


def test_a_plain_server_is_not_a_cluster(redis_server: RedisServer) -> None:
    url = f"redis+cluster://{redis_server.host}:{redis_server.port}"
    with open_store(url, retry=RetryPolicy.none()) as store, \
            pytest.raises(BackendError, match="is it a Redis Cluster") as raised:
        store.session("s").info()
    assert not isinstance(raised.value, BackendUnavailable)


def test_no_node_reachable_is_unavailable() -> None:
    with open_store("redis+cluster://127.0.0.1:1", retry=RetryPolicy.none()) as store, \
            pytest.raises(BackendUnavailable, match="cannot be connected"):
        store.session("s").info()


def test_doctor_reports_the_topology(redis_cluster: RedisCluster) -> None:
    report = diagnose(redis_cluster.url)
    checks = {check.name: check for check in report.checks}
    assert checks["cluster"].status == "ok" and "16384 of 16384" in checks["cluster"].detail
    assert checks["replicas"].status == "ok"
    assert sorted(checks["replicas"].value.values()) == [1, 1, 1]
    assert sum(name.startswith("version ") for name in checks) == 3  # every primary
    assert not report.failed
    strict = {c.name: c for c in diagnose(redis_cluster.url, wait_replicas=2).checks}
    assert strict["replicas"].status == "warn" and "wait_replicas=2" in strict["replicas"].detail


def test_doctor_on_no_cluster_fails_without_raising() -> None:
    report = diagnose("redis+cluster://127.0.0.1:1")
    assert report.failed and report.checks[0].name == "cluster"


def test_the_async_store_routes_the_same_way(cluster_url: str, namespace: str) -> None:
    async def scenario() -> list[str]:
        async with await open_async_store(cluster_url, namespace=namespace,
                                          wait_replicas=1) as store:
            for i in range(6):
                await store.session(f"a{i}").append([user(str(i))])
            return sorted([session async for session in store.sessions()])

    assert asyncio.run(scenario()) == [f"a{i}" for i in range(6)]


def test_heads_follow_a_slot_that_moved_since_the_map_was_read(
    open_cluster: OpenRedis, redis_cluster: RedisCluster
) -> None:
    """A read pipelined to the node the map names is answered MOVED there: it is
    sent again on its own, to the slot's new owner."""
    stale = open_cluster(retry=RetryPolicy.none())
    stale.session("warm").append([user("the map is known now")])
    moved, slot = _in_an_empty_slot(stale, redis_cluster, "heads-moved")
    old = redis_cluster.owner(slot)
    new = next(node for node in redis_cluster.primaries if node is not old)
    for node in redis_cluster.primaries:  # an empty slot changes hands at once
        node.command("CLUSTER", "SETSLOT", slot, "NODE", _node_id(new))
    fresh = open_cluster(namespace=stale.namespace)
    fresh.session(moved).append([user("on the new owner")])
    heads = []
    cursor = None
    while True:  # the stale store still maps the slot to its old owner
        page = stale._backend.heads("heads-moved", cursor)
        heads += page.heads
        if page.cursor is None:
            break
        cursor = page.cursor
    [(session, raw)] = heads
    assert (session, raw.version) == (moved, 1)
    assert stale.session(moved).read().messages[0].text == "on the new owner"
