"""The pool's short way (``_backends/postgres/_async/pool.py``): a free connection is
handed out and taken back directly; every other case goes psycopg_pool's way."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import psycopg
import pytest
from psycopg.pq import TransactionStatus

from chatledger import BackendUnavailable, Store, open_async_store, user
from chatledger._backends.postgres._async.pool import AsyncPool
from chatledger._backends.postgres._sync.pool import Pool
from tests.postgres.conftest import OpenPostgres


def _pool(store: Any) -> Pool:
    pool = store._backend._pool
    assert isinstance(pool, (Pool, AsyncPool))
    return pool  # type: ignore[return-value]


def _requests(pool: Any) -> int:
    """The requests that went psycopg_pool's way (the short way is not counted)."""
    return int(pool.get_stats().get("requests_num", 0))


def _backend_pid(store: Store) -> int:
    pool = _pool(store)
    connection = pool.getconn()
    try:
        row = connection.execute("SELECT pg_backend_pid()").fetchone()
    finally:
        pool.putconn(connection)
    assert row is not None
    return int(row[0])


def test_a_free_connection_goes_the_short_way_and_is_used_again(
        open_postgres: OpenPostgres) -> None:
    store = open_postgres(max_connections=1)
    session = store.session("s")
    session.append([user("first")])  # the pool's first connection: psycopg_pool's way
    pid, before = _backend_pid(store), _requests(_pool(store))
    for i in range(5):
        session.append([user(f"m{i}")])
    assert session.read().version == 6
    assert _requests(_pool(store)) == before  # none went psycopg_pool's way
    assert _backend_pid(store) == pid


def test_a_connection_lost_while_held_is_replaced_not_handed_out_again(
        open_postgres: OpenPostgres, raw: psycopg.Connection[Any]) -> None:
    store = open_postgres(max_connections=1, application_name="held")
    session = store.session("s")
    session.append([user("a")])
    pool = _pool(store)
    held = pool.getconn()
    raw.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = 'held'")
    with pytest.raises(psycopg.OperationalError):
        held.execute("SELECT 1")
    assert held.pgconn.transaction_status == TransactionStatus.UNKNOWN
    pool.putconn(held)  # broken: psycopg_pool's way, which discards it
    assert session.append([user("b")]).version == 2  # on a new connection
    assert held.closed
    assert _backend_pid(store) != held.info.backend_pid


def test_a_connection_killed_during_an_append_fails_that_call_only(
        open_postgres: OpenPostgres, raw: psycopg.Connection[Any]) -> None:
    store = open_postgres(max_connections=1, application_name="victim2")
    session = store.session("s")
    session.append([user("a")])
    raw.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = 'victim2'")
    with pytest.raises(BackendUnavailable):
        session.append([user("b")])
    assert session.append([user("b")]).version == 2  # the pool connected again
    assert [m.text for m in session.read()] == ["a", "b"]


def test_a_connection_in_a_transaction_is_rolled_back_by_psycopg_pool(
        open_postgres: OpenPostgres) -> None:
    store = open_postgres(max_connections=1)
    store.session("s").append([user("a")])
    pool = _pool(store)
    connection = pool.getconn()
    connection.execute("BEGIN")
    connection.execute("SELECT 1")
    assert connection.pgconn.transaction_status == TransactionStatus.INTRANS
    pool.putconn(connection)
    again = pool.getconn()
    try:
        assert again.pgconn.transaction_status == TransactionStatus.IDLE
    finally:
        pool.putconn(again)


def test_an_expired_connection_is_closed_and_replaced(open_postgres: OpenPostgres) -> None:
    store = open_postgres(max_connections=1)
    store.session("s").append([user("a")])
    pool = _pool(store)
    old = pool.getconn()
    old._expire_at = time.monotonic() - 1  # past its max_lifetime
    pool.putconn(old)
    assert old.closed
    assert store.session("s").append([user("b")]).version == 2
    new = pool.getconn()
    try:
        assert new is not old
    finally:
        pool.putconn(new)


def test_a_waiting_caller_is_handed_the_connection_given_back(
        open_postgres: OpenPostgres) -> None:
    store = open_postgres(max_connections=1, timeout=60)
    store.session("s").append([user("a")])
    pool = _pool(store)
    held = pool.getconn()
    got: list[Any] = []
    waiter = threading.Thread(target=lambda: got.append(pool.getconn()))
    waiter.start()
    while not pool._waiting:  # the waiter is queued in psycopg_pool
        time.sleep(0.001)
    pool.putconn(held)  # not kept in the pool: handed to the waiter
    waiter.join(30)
    assert got == [held]
    assert not pool._pool
    pool.putconn(got[0])


def test_a_connection_given_back_to_a_closed_pool_is_closed(
        open_postgres: OpenPostgres) -> None:
    store = open_postgres(max_connections=1)
    store.session("s").append([user("a")])
    pool = _pool(store)
    held = pool.getconn()
    store.close()
    pool.putconn(held)
    assert held.closed
    assert not pool._pool


def test_a_pool_with_a_check_always_goes_psycopg_pool_s_way(postgres_url: str) -> None:
    checked: list[Any] = []
    pool = Pool(postgres_url, min_size=0, max_size=1, open=False, check=checked.append,
                kwargs={"autocommit": True})
    pool.open(wait=False)
    try:
        for _ in range(3):
            connection = pool.getconn()
            pool.putconn(connection)
        assert len(checked) == 3  # the check ran on every request: none was short
    finally:
        pool.close()


def test_async_a_free_connection_goes_the_short_way(postgres_url: str, namespace: str) -> None:
    async def scenario() -> tuple[int, int, int]:
        async with await open_async_store(postgres_url, namespace=namespace,
                                          max_connections=1) as store:
            session = store.session("s")
            await session.append([user("first")])
            before = _requests(_pool(store))
            for i in range(5):
                await session.append([user(f"m{i}")])
            return (await session.read()).version, before, _requests(_pool(store))

    version, before, after = asyncio.run(scenario())
    assert version == 6 and after == before
