"""WAITAOF where the server has it (Redis 7.2+ with an AOF), WAIT elsewhere.

This machine has Redis 7.0, where WAITAOF is an unknown command: the tests
see the probe reach the server and the store settle on WAIT. The 7.2 reply is
parsed by :class:`~chatledger._backends.redis.calls.Replication` without I/O,
and a 7.0 server with a three-argument command renamed WAITAOF answers the
probe without error, as 7.2 does: then the AOF setting decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Iterator

import pytest
import redis
import redis.asyncio

from chatledger import BackendUnavailable, RetryPolicy, user
from chatledger._backends.redis._async.client import confirms_fsync as async_confirms_fsync
from chatledger._backends.redis._sync.client import confirms_fsync
from chatledger._backends.redis.calls import Replication
from chatledger.testing._redis_server import RedisServer
from chatledger.testing._sentinel import SentinelGroup
from tests.redis.conftest import OpenRedis


def _err_replies(server: RedisServer) -> int:
    """ERR replies the server sent so far (an unknown command is one)."""
    found = re.search(rb"errorstat_ERR:count=(\d+)", server.info("errorstats"))
    return int(found.group(1)) if found else 0


def test_redis_7_0_has_no_waitaof_so_the_store_waits_with_wait(
    open_redis: OpenRedis, private_redis: RedisServer
) -> None:
    assert b"redis_version:7.0" in private_redis.info("server")
    # A store's connection draws ERR replies of its own (CLIENT SETINFO on 7.0):
    # a store that waits for no replica shows how many, and never asks.
    plain = open_redis(private_redis.url)
    errors = _err_replies(private_redis)
    plain.session("s").append([user("x")])
    plain.session("s").read()
    connecting = _err_replies(private_redis) - errors
    assert plain._backend.node.confirmation is None

    store = open_redis(private_redis.url, wait_replicas=1, wait_timeout=0.05)
    errors = _err_replies(private_redis)
    store.session("s").read()  # no write: nothing to confirm, nothing asked
    assert store._backend.node.confirmation is None
    with pytest.raises(BackendUnavailable, match="0 of 1 replicas"):  # no replica here
        store.session("s").append([user("y")])
    with pytest.raises(BackendUnavailable, match="0 of 1 replicas"):
        store.session("s").append([user("z")])
    # Asked once per store, and 7.0 answered ERR unknown command: WAIT it is.
    assert _err_replies(private_redis) - errors == connecting + 1
    assert store._backend.node.confirmation == Replication(1, 50, waitaof=False)


@pytest.fixture(params=[True, False], ids=["aof", "no-aof"])
def answers_waitaof(request: pytest.FixtureRequest) -> Iterator[tuple[redis.Redis, bool]]:
    """A 7.0 server on which ``WAITAOF 0 0 0`` succeeds (it is GETRANGE, renamed)."""
    renamed = ["--rename-command", "GETRANGE", "WAITAOF"]
    with RedisServer(appendonly=request.param, extra_args=renamed) as server:
        client = redis.Redis(host=server.host, port=server.port)
        yield client, request.param
        client.close()


def test_a_server_that_answers_waitaof_is_waited_on_only_with_an_aof(
    answers_waitaof: tuple[redis.Redis, bool],
) -> None:
    client, appendonly = answers_waitaof
    assert confirms_fsync(client) is appendonly

    async def asked_async() -> bool:
        options = client.get_connection_kwargs()
        async with redis.asyncio.Redis(host=options["host"], port=options["port"]) as aclient:
            return await async_confirms_fsync(aclient)

    assert asyncio.run(asked_async()) is appendonly


def test_the_waitaof_reply_counts_replicas_only_once_the_local_fsync_is_done() -> None:
    waitaof = Replication(replicas=1, timeout_ms=200, waitaof=True)
    # The master's own fsync, then WAIT: replicas need no AOF of their own.
    assert waitaof.commands == (("WAITAOF", 1, 0, 200), ("WAIT", 1, 200))
    assert waitaof.confirmed([[1, 0], 1]) == 1
    assert waitaof.confirmed([[1, 0], 0]) == 0
    assert waitaof.confirmed([[0, 0], 1]) == 0  # on a replica, not yet on the master's disk
    waitaof.check(waitaof.confirmed([[1, 0], 3]), "here")  # more than asked is enough
    with pytest.raises(BackendUnavailable, match="0 of 1 replicas confirmed the write"):
        waitaof.check(waitaof.confirmed([[0, 0], 1]), "here")
    assert Replication(replicas=1, timeout_ms=200).confirmed([1]) == 1


def test_sentinel_asks_each_new_master_again(open_redis: OpenRedis) -> None:
    with SentinelGroup() as group:
        store = open_redis(group.url, wait_replicas=1, wait_timeout=1.0)
        store.session("s").append([user("confirmed")])
        assert store._backend.node.confirmation == Replication(1, 1000, waitaof=False)
        old = group.master
        old.kill()
        group.wait_for_failover(old)
        patient = open_redis(group.url, namespace=store.namespace,
                             retry=RetryPolicy(attempts=100, backoff=0.05, deadline=20))
        patient.session("s").read()  # the new master answers
        deadline = time.monotonic() + 10
        while store._backend.node.confirmation is not None:  # its next look at the sentinels
            assert time.monotonic() < deadline, "the store never noticed the new master"
            with contextlib.suppress(BackendUnavailable):  # its pooled link died with the master
                store.session("s").read()
            time.sleep(0.05)
        with pytest.raises(BackendUnavailable, match="0 of 1"):  # the new master has no replica
            store.session("s").append([user("unconfirmed")])
        assert store._backend.node.confirmation == Replication(1, 1000, waitaof=False)
