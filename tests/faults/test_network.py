"""The network faults every server backend meets alike, through a FaultProxy in front
of the session's server: a lost reply to a write the server applied, and an outage
(connections refused, or held open with nothing answered).

The scenarios and assertions are the same on each backend; what differs is in
`Target`, named where it is used: how a store is bounded during an outage. An
append is one request on each (a script; a transaction; on PostgreSQL one
pipeline, whose replies the server sends once COMMIT has run): losing its
reply loses the answer to a write the server applied.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from chatledger import RetryPolicy, assistant, open_async_store, user
from chatledger.testing import FaultProxy
from tests.conftest import OpenLedger, retrying, store_opener
from tests.unavailable import SLACK, unavailable_in


@dataclass(frozen=True)
class Target:
    name: str
    server: str  # the fixture of the session's server
    url: str  # the fixture of a URL on it
    # During an outage: the store's options, and the time a call may take before it
    # must have raised (the timeout, or the retry policy's deadline).
    outage_options: dict[str, Any] = field(default_factory=dict)
    outage_bound: float = 0.0
    # On a blackhole, close the pooled connections too, so that every call opens a
    # new one that hangs (PostgreSQL's pool would otherwise hold a connection it
    # knows is busy).
    blackhole_new_connections: bool = False


TARGETS = {
    "redis": Target("redis", "redis_server", "redis_url",
                    outage_options={"timeout": 0.4}, outage_bound=0.4),
    "postgres": Target("postgres", "postgres_server", "postgres_url",
                       outage_options={"timeout": 0.5,
                                       "retry": RetryPolicy(attempts=3, deadline=1.0)},
                       outage_bound=1.0, blackhole_new_connections=True),
    "dynamodb": Target("dynamodb", "dynamodb_server", "dynamodb_url"),
}


@pytest.fixture
def proxy(target: Target, request: pytest.FixtureRequest) -> Iterator[FaultProxy]:
    server = request.getfixturevalue(target.server)
    with FaultProxy(server.host, server.port) as running:
        yield running


@pytest.fixture
def url(target: Target, request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(target.url))


@pytest.fixture
def proxied_url(target: Target, request: pytest.FixtureRequest, url: str,
                proxy: FaultProxy) -> str:
    """The URL with the proxy in the server's place."""
    server = request.getfixturevalue(target.server)
    address = f"{server.host}:{server.port}"
    assert address in url
    return url.replace(address, proxy.url_netloc)


@pytest.fixture
def open_(url: str, namespace: str) -> Iterator[OpenLedger]:
    with store_opener(url, namespace=namespace, retry=RetryPolicy.none()) as opener:
        yield opener


def _targets(*names: str) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("target", [TARGETS[name] for name in names], ids=names)


@_targets("redis", "postgres", "dynamodb")
def test_an_append_whose_reply_was_lost_is_stored_exactly_once(
    target: Target, open_: OpenLedger, proxy: FaultProxy, proxied_url: str,
) -> None:
    store = open_(proxied_url, retry=retrying())
    session = store.session("s")
    session.append([user("warm up")])
    proxy.lose_next_reply()  # the append's one request reaches the server, its reply is lost
    ack = session.append([user("q"), assistant("a")])
    assert proxy.faults_injected == 1
    assert (ack.first_seq, ack.last_seq, ack.deduplicated) == (2, 3, True)
    assert [m.text for m in open_().session("s").read()] == ["warm up", "q", "a"]


@_targets("postgres")
def test_async_an_append_whose_reply_was_lost_is_stored_exactly_once(
    target: Target, proxy: FaultProxy, proxied_url: str, namespace: str,
) -> None:
    async def scenario() -> list[str]:
        async with await open_async_store(proxied_url, namespace=namespace,
                                          retry=retrying()) as store:
            await store.session("s").append([user("warm up")])
            proxy.lose_next_reply()
            ack = await store.session("s").append([user("q"), assistant("a")])
            assert proxy.faults_injected == 1
            assert ack.deduplicated and (ack.first_seq, ack.last_seq) == (2, 3)
            return [m.text for m in await store.session("s").read()]

    assert asyncio.run(scenario()) == ["warm up", "q", "a"]
    assert proxy.faults_injected == 1


@pytest.mark.parametrize("outage", ["refuse", "blackhole"])
@_targets("redis", "postgres")
def test_a_read_during_an_outage_raises_never_answers_empty(
    target: Target, open_: OpenLedger, proxy: FaultProxy, proxied_url: str, outage: str,
) -> None:
    store = open_(proxied_url, **target.outage_options)
    store.session("s").append([user("a")])
    getattr(proxy, outage)()
    if outage == "blackhole" and target.blackhole_new_connections:
        proxy.close_all()
    for operation in (lambda: store.session("s").read(), lambda: store.session("s").info(),
                      lambda: list(store.sessions())):
        assert unavailable_in(operation) < target.outage_bound + SLACK
    proxy.clear()
    proxy.refuse(False)
    assert store.session("s").read().version == 1

