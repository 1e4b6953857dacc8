"""The native async backend's own paths: opening, migrating, doctor, failures."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any
from urllib.parse import quote

import psycopg
import pytest

from chatledger import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    open_async_store,
    open_store,
    user,
)
from chatledger._backends.postgres.sql import SCHEMA_VERSION
from chatledger._backends.provisioning import MigratesSchema
from chatledger.testing._postgres_server import PostgresServer
from tests.postgres_fixtures import migrated


def test_async_open_migrates_a_new_schema_then_finds_it_current(postgres_url: str) -> None:
    url = f"{postgres_url}?schema=a_{uuid.uuid4().hex[:8]}"

    async def scenario() -> tuple[list[int], list[int], int]:
        async with await open_async_store(f"{url}&migrate=true") as first:
            await first.session("s").append([user("hi")])
            assert isinstance(first._backend, MigratesSchema)
            applied = first._backend.migrated
        async with await open_async_store(f"{url}&migrate=true") as again:
            assert isinstance(again._backend, MigratesSchema)
            return applied, again._backend.migrated, again._backend.schema_version

    assert asyncio.run(scenario()) == (list(range(1, SCHEMA_VERSION + 1)), [], SCHEMA_VERSION)


def test_async_open_refuses_a_missing_or_newer_schema(postgres_url: str,
                                                      raw: psycopg.Connection) -> None:
    schema = f"a_{uuid.uuid4().hex[:8]}"
    with pytest.raises(ConfigError, match="chatledger migrate-schema URL"):
        asyncio.run(open_async_store(f"{postgres_url}?schema={schema}"))
    open_store(f"{postgres_url}?schema={schema}&migrate=true").close()
    raw.execute(f"INSERT INTO {schema}.schema_version (version) VALUES (7)")
    for migrate in ("true", "false"):
        with pytest.raises(ConfigError, match="newer than this chatledger"):
            asyncio.run(open_async_store(f"{postgres_url}?schema={schema}&migrate={migrate}"))


def test_async_a_refused_connection_says_why(postgres_url: str) -> None:
    with pytest.raises(BackendUnavailable, match="refused"):
        asyncio.run(open_async_store("postgresql://postgres@127.0.0.1:1/x", timeout=0.5,
                                     retry_deadline=1.0))


def test_async_doctor_checks(postgres_url: str) -> None:
    async def checks() -> dict[str, str]:
        async with await open_async_store(postgres_url) as store:
            return {c.name: c.status for c in await store._backend.checks()}

    assert asyncio.run(checks())["schema"] == "ok"


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_checks_of_a_dead_server_fail_without_raising(kind: str) -> None:
    with PostgresServer() as server:
        url = migrated(server)
        if kind == "sync":
            with open_store(url, timeout=0.5) as store:
                server.kill()
                found = store._backend.checks()
        else:
            async def scenario() -> list[object]:
                async with await open_async_store(url, timeout=0.5) as store:
                    server.kill()
                    return await store._backend.checks()  # type: ignore[return-value]

            found = asyncio.run(scenario())  # type: ignore[assignment]
    assert [(c.name, c.status) for c in found] == [("server", "fail")]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_table_gone_behind_the_store_is_a_backend_error_and_the_store_goes_on(
    postgres_url: str, raw: psycopg.Connection, kind: str,
) -> None:
    schema = f"g_{uuid.uuid4().hex[:8]}"
    url = f"{postgres_url}?schema={schema}&migrate=true"
    open_store(url).close()
    raw.execute(f"DROP TABLE {schema}.entries")
    if kind == "sync":
        with open_store(url) as store, pytest.raises(BackendError) as caught:
            store.session("s").append([user("hi")])
    else:
        async def scenario() -> None:
            async with await open_async_store(url) as store:
                await store.session("s").append([user("hi")])

        with pytest.raises(BackendError) as caught:
            asyncio.run(scenario())
    assert not isinstance(caught.value, BackendUnavailable)
    assert "entries" in str(caught.value)


def test_async_appends_where_the_default_isolation_is_repeatable_read(
        postgres_url: str) -> None:
    # The append's function needs READ COMMITTED: the call goes inside a transaction
    # that sets it (tests/postgres/test_locks.py races stores on such a server).
    options = quote(r"-c default_transaction_isolation=repeatable\ read")
    url = f"{postgres_url}{'&' if '?' in postgres_url else '?'}options={options}"

    async def scenario() -> tuple[bool, list[int], list[str]]:
        async with await open_async_store(url, namespace=uuid.uuid4().hex) as store:
            session = store.session("s")
            acks = [await session.append([user(f"m{i}")]) for i in range(3)]
            history = await session.read()
            return (store._backend._read_committed,  # type: ignore[attr-defined]
                    [ack.version for ack in acks], [m.text for m in history.messages])

    assert asyncio.run(scenario()) == (False, [1, 2, 3], ["m0", "m1", "m2"])


def test_an_async_store_opened_in_one_event_loop_serves_the_next(postgres_url: str) -> None:
    # pytest fixtures, notebooks and scripts open a store in one asyncio.run and use it in
    # the next: the pool's workers died with the first loop, and every call timed out.
    url = f"{postgres_url}?schema=a_{uuid.uuid4().hex[:8]}&migrate=true&timeout=2"
    store = asyncio.run(open_async_store(url))
    backend: Any = store._backend
    pools = []
    for turn in ("first", "second"):
        ack = asyncio.run(store.session("s").append([user(turn)]))
        assert ack.last_seq == ("first", "second").index(turn) + 1
        pools.append(backend._pool)
    assert [m.text for m in asyncio.run(store.session("s").read())] == ["first", "second"]
    pools.append(backend._pool)
    assert len({id(pool) for pool in pools}) == 3  # one per loop, the ended ones retired
    assert [pool.closed for pool in pools] == [True, True, False]
    asyncio.run(store.close())  # from yet another loop, the last one's gone
    assert pools[-1].closed and not pools[-1]._pool  # its idle connection closed too
    with pytest.raises(BackendUnavailable):  # closed is closed, from any loop
        asyncio.run(store.session("s").read())


def test_an_async_store_closes_on_the_loop_its_pool_runs_on() -> None:
    # A pool running on a loop in another thread is closed there, not from here.
    import threading

    from chatledger._backends.postgres.pooling import AsyncPooling

    class Pool:
        closed_on: asyncio.AbstractEventLoop | None = None

        async def open(self, wait: bool = False) -> None:
            pass

        async def close(self) -> None:
            Pool.closed_on = asyncio.get_running_loop()

    other = asyncio.new_event_loop()
    running = threading.Thread(target=other.run_forever, daemon=True)
    running.start()
    try:
        pooling: Any = AsyncPooling(Pool)
        asyncio.run_coroutine_threadsafe(pooling.here(), other).result(timeout=5)
        asyncio.run(pooling.close())
        assert Pool.closed_on is other
    finally:
        other.call_soon_threadsafe(other.stop)
        running.join(timeout=5)
        other.close()


def test_two_threads_loops_on_one_async_store_get_answers(postgres_url: str) -> None:
    # Not the intended use (one loop at a time), but never a pool opened on one loop and
    # recorded for the other (that raised "The future belongs to a different loop").
    import threading

    url = f"{postgres_url}?schema=a_{uuid.uuid4().hex[:8]}&migrate=true&timeout=3"
    store = asyncio.run(open_async_store(url))
    outcomes: dict[str, list[object]] = {"a": [], "b": []}

    async def appends(name: str) -> None:
        async def one(n: int) -> object:
            try:
                return (await store.session(name).append([user(f"{n}")])).last_seq
            except Exception as exc:  # recorded: the assertion names it
                return exc
        outcomes[name] = list(await asyncio.gather(*(one(n) for n in range(10))))

    threads = [threading.Thread(target=asyncio.run, args=(appends(name),)) for name in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    asyncio.run(store.close())
    assert {name: sorted(map(str, found)) for name, found in outcomes.items()} == {
        name: sorted(str(n) for n in range(1, 11)) for name in "ab"}
