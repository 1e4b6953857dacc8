"""``from_url`` connects, as LangGraph's own savers do in ``from_conn_string``."""

from __future__ import annotations

import asyncio

import pytest

from chatledger import BackendUnavailable, RetryPolicy
from chatledger.langgraph import AsyncLedgerSaver, LedgerSaver
from chatledger.testing import RedisServer, free_port

DOWN = {"retry": RetryPolicy.none(), "timeout": 1.0}


def test_a_server_that_is_down_fails_the_sync_opening() -> None:
    with pytest.raises(BackendUnavailable), \
            LedgerSaver.from_url(f"redis://127.0.0.1:{free_port()}/0", **DOWN):
        pass


def test_a_server_that_is_down_fails_the_async_opening() -> None:
    async def scenario() -> None:
        async with AsyncLedgerSaver.from_url(f"redis://127.0.0.1:{free_port()}/0", **DOWN):
            pass

    with pytest.raises(BackendUnavailable):
        asyncio.run(scenario())


def _clients(server: RedisServer) -> int:
    """Clients connected now, besides the one asking."""
    line = next(line for line in server.info("clients").splitlines()
                if line.startswith(b"connected_clients:"))
    return int(line.split(b":")[1]) - 1


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_an_opened_saver_is_connected_and_wrote_nothing(private_redis: RedisServer,
                                                        kind: str) -> None:
    """A run's first step does not wait for a connection (LangGraph times its stream)."""
    assert _clients(private_redis) == 0
    if kind == "sync":
        with LedgerSaver.from_url(private_redis.url):
            assert _clients(private_redis) == 1
    else:
        async def scenario() -> None:
            async with AsyncLedgerSaver.from_url(private_redis.url):
                assert _clients(private_redis) == 1

        asyncio.run(scenario())
    assert private_redis.command("DBSIZE") == 0
