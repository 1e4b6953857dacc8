"""Real faults on a real PostgreSQL: connections reset (FaultProxy), a server paused,
killed, restarted, or ending our sessions. Lost replies and outages, which every
server backend meets alike, are in tests/faults/test_network.py.

Each test that hurts a server takes ``private_postgres``, a server of its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import psycopg
import pytest

from chatledger import (
    BackendUnavailable,
    RetryPolicy,
    assistant,
    open_async_store,
    open_store,
    user,
)
from chatledger.testing import FaultProxy
from chatledger.testing._postgres_server import PostgresServer
from tests.conftest import resumed_after
from tests.postgres.conftest import OpenPostgres, retrying
from tests.postgres_fixtures import migrated
from tests.unavailable import SLACK, unavailable_in


@pytest.fixture
def proxy(postgres_server: PostgresServer) -> Iterator[FaultProxy]:
    with FaultProxy(postgres_server.host, postgres_server.port) as running:
        yield running


def _through(proxy: FaultProxy, url: str) -> str:
    return url.replace(url.split("@")[1].split("/", maxsplit=1)[0], proxy.url_netloc)


def test_reset_connections_are_unavailable_then_retried(
    open_postgres: OpenPostgres, proxy: FaultProxy, postgres_url: str,
) -> None:
    url = _through(proxy, postgres_url)
    store, patient = open_postgres(url), open_postgres(url, retry=retrying())
    store.session("s").append([user("a")])
    patient.session("s").read()
    assert proxy.reset_all() >= 1
    with pytest.raises(BackendUnavailable) as caught:
        store.session("s").append([user("b")])
    assert isinstance(caught.value.__cause__, psycopg.OperationalError)
    assert patient.session("s").append([user("b")]).version == 2
    assert [m.text for m in store.session("s").read()] == ["a", "b"]


paused = resumed_after("private_postgres")


def test_a_paused_server_is_unavailable_within_the_deadline(paused: PostgresServer) -> None:
    url = migrated(paused)
    policy = RetryPolicy(attempts=5, backoff=0.01, deadline=1.0)
    with open_store(url, timeout=0.5, retry=policy) as store:
        store.session("s").append([user("a")])
        paused.pause()
        # A pooled connection hangs on its query; the call ends at its deadline.
        assert unavailable_in(lambda: store.session("s").read()) < 1.0 + SLACK
        assert unavailable_in(lambda: store.session("s").append([user("b")])) < 1.0 + SLACK
        paused.resume()
        store.session("s").append([user("b")])
        assert [m.text for m in store.session("s").read()] == ["a", "b"]


def test_async_a_paused_server_is_unavailable_within_the_deadline(
    paused: PostgresServer,
) -> None:
    url = migrated(paused)

    async def scenario() -> float:
        policy = RetryPolicy(attempts=5, backoff=0.01, deadline=1.0)
        async with await open_async_store(url, timeout=0.5, retry=policy) as store:
            await store.session("s").append([user("a")])
            paused.pause()
            started = time.monotonic()
            with pytest.raises(BackendUnavailable):
                await store.session("s").read()
            elapsed = time.monotonic() - started
            paused.resume()
            await store.session("s").append([user("b")])
            assert [m.text for m in await store.session("s").read()] == ["a", "b"]
            return elapsed

    assert asyncio.run(scenario()) < 1.0 + SLACK


def test_a_killed_server_is_unavailable_and_a_restart_keeps_every_acknowledged_append(
    private_postgres: PostgresServer,
) -> None:
    url = migrated(private_postgres)
    with open_store(url, retry=RetryPolicy.none()) as store, \
            open_store(url, retry=retrying()) as patient:
        acks = [store.session("s").append([user(f"q{i}"), assistant(f"a{i}")])
                for i in range(5)]
        private_postgres.kill()
        with pytest.raises(BackendUnavailable):
            store.session("s").read()
        private_postgres.restart()
        history = patient.session("s").read(last=20, min_version=acks[-1].version)
    assert [m.text for m in history] == [t for i in range(5) for t in (f"q{i}", f"a{i}")]


def test_a_terminated_session_is_unavailable_then_retried(
    open_postgres: OpenPostgres, raw: psycopg.Connection,
) -> None:
    store = open_postgres(application_name="victim")
    patient = open_postgres(application_name="victim", retry=retrying())
    store.session("s").append([user("a")])
    patient.session("s").read()
    ended = raw.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                        " WHERE application_name = 'victim'").fetchone()
    assert ended is not None and ended[0] >= 2
    with pytest.raises(BackendUnavailable, match="terminat"):
        store.session("s").read()
    assert patient.session("s").append([user("b")]).version == 2
