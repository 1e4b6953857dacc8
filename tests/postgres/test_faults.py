"""Real faults on a real PostgreSQL: a network that resets, hangs and loses replies
(FaultProxy), a server paused, killed, restarted, or ending our sessions.

Each test that hurts a server takes ``private_postgres``, a server of its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

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
from tests.postgres.conftest import OpenPostgres, retrying
from tests.postgres_fixtures import migrated

# These tests prove "raises instead of hanging", not speed: the bound is the
# promised time plus a slack wide enough for a loaded machine.
SLACK = 4.0


def _elapsed(operation: Callable[[], object]) -> float:
    started = time.monotonic()
    with pytest.raises(BackendUnavailable):
        operation()
    return time.monotonic() - started


@pytest.fixture
def proxy(postgres_server: PostgresServer) -> Iterator[FaultProxy]:
    with FaultProxy(postgres_server.host, postgres_server.port) as running:
        yield running


def _through(proxy: FaultProxy, url: str) -> str:
    return url.replace(url.split("@")[1].split("/", maxsplit=1)[0], proxy.url_netloc)


def _lose_the_commit_reply(store: Any, proxy: FaultProxy) -> None:
    """Drop the reply to the next append's COMMIT: the last step before it is _save."""
    save = store._backend._save
    armed = [True]

    def save_then_arm(*args: Any, **kwargs: Any) -> Any:
        result = save(*args, **kwargs)
        if armed and not kwargs.get("created"):
            armed.clear()
            proxy.lose_next_reply()
        return result

    store._backend._save = save_then_arm


def test_a_commit_whose_reply_was_lost_is_found_by_the_retry(
    open_postgres: OpenPostgres, proxy: FaultProxy, postgres_url: str,
) -> None:
    store = open_postgres(_through(proxy, postgres_url), retry=retrying())
    session = store.session("s")
    session.append([user("warm up")])
    _lose_the_commit_reply(store, proxy)
    ack = session.append([user("q"), assistant("a")])
    assert proxy.faults_injected == 1
    assert (ack.first_seq, ack.last_seq, ack.deduplicated) == (2, 3, True)
    assert [m.text for m in open_postgres().session("s").read()] == ["warm up", "q", "a"]


def test_async_a_commit_whose_reply_was_lost_is_stored_exactly_once(
    proxy: FaultProxy, postgres_url: str, namespace: str,
) -> None:
    async def scenario() -> list[str]:
        async with await open_async_store(_through(proxy, postgres_url), namespace=namespace,
                                          retry=retrying()) as store:
            await store.session("s").append([user("warm up")])

            save = store._backend._save  # type: ignore[attr-defined]

            async def save_then_arm(*args: Any, **kwargs: Any) -> None:
                await save(*args, **kwargs)
                proxy.lose_next_reply()

            store._backend._save = save_then_arm  # type: ignore[attr-defined]
            ack = await store.session("s").append([user("q"), assistant("a")])
            assert ack.deduplicated and (ack.first_seq, ack.last_seq) == (2, 3)
            return [m.text for m in await store.session("s").read()]

    assert asyncio.run(scenario()) == ["warm up", "q", "a"]
    assert proxy.faults_injected == 1


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


@pytest.mark.parametrize("outage", ["refuse", "blackhole"])
def test_a_read_during_an_outage_raises_never_answers_empty(
    open_postgres: OpenPostgres, proxy: FaultProxy, postgres_url: str, outage: str,
) -> None:
    store = open_postgres(_through(proxy, postgres_url), timeout=0.5,
                          retry=RetryPolicy(attempts=3, deadline=1.0))
    store.session("s").append([user("a")])
    getattr(proxy, outage)()
    if outage == "blackhole":
        proxy.close_all()  # new connections, each hanging
    for operation in (lambda: store.session("s").read(), lambda: store.session("s").info(),
                      lambda: list(store.sessions())):
        assert _elapsed(operation) < 1.0 + SLACK
    proxy.clear()
    proxy.refuse(False)
    assert store.session("s").read().version == 1


@pytest.fixture
def paused(private_postgres: PostgresServer) -> Iterator[PostgresServer]:
    yield private_postgres
    if private_postgres.running:
        private_postgres.resume()


def test_a_paused_server_is_unavailable_within_the_deadline(paused: PostgresServer) -> None:
    url = migrated(paused)
    policy = RetryPolicy(attempts=5, backoff=0.01, deadline=1.0)
    with open_store(url, timeout=0.5, retry=policy) as store:
        store.session("s").append([user("a")])
        paused.pause()
        # A pooled connection hangs on its query; the call ends at its deadline.
        assert _elapsed(lambda: store.session("s").read()) < 1.0 + SLACK
        assert _elapsed(lambda: store.session("s").append([user("b")])) < 1.0 + SLACK
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
