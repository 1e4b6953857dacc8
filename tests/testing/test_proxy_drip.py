"""FaultProxy.drip(): replies from a real redis-server arrive one byte at a time."""

from __future__ import annotations

import pytest

from chatledger.testing._proxy import FaultProxy
from chatledger.testing._redis_server import RedisServer
from tests.testing._sockets import (
    PING,
    PONG,
    bulk,
    connect,
    proxy_threads,
    recv_pieces,
    resp,
    roundtrip,
    stop_within,
    wait_until,
)

pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")


def test_a_dripped_reply_arrives_whole_in_pieces_within_each_read_timeout(
    redis: RedisServer, proxy: FaultProxy
) -> None:
    value = b"a slow reply"
    redis.command("SET", "dripped", value)
    reply = bulk(value)  # 19 bytes, 0.1 s before each: about twice the read timeout
    # The timeout bounds each recv(), not the reply: a byte comes every 0.1 s.
    with connect(proxy, timeout=1.0) as client:
        proxy.drip(byte_every=0.1)
        client.sendall(resp("GET", "dripped"))
        pieces = recv_pieces(client, len(reply))
    assert b"".join(pieces) == reply
    assert len(pieces) > 1, "the reply came whole"
    # The proxy counts a byte once send() returns, a moment after the client may read it.
    assert wait_until(lambda: proxy.bytes_down == len(reply))
    assert proxy.faults_injected == 0  # shaping traffic is not a fault


def test_drip_slows_replies_only_and_stop_ends_a_long_drip(redis: RedisServer) -> None:
    redis.command("DEL", "drip-request")
    proxy = FaultProxy(redis.host, redis.port).start()
    proxy.drip(byte_every=600)
    with connect(proxy) as client:
        client.sendall(resp("SET", "drip-request", "arrived"))
        # The request goes up at full speed: the server applies it at once.
        assert wait_until(lambda: redis.command("GET", "drip-request") == b"arrived")
        client.settimeout(0.3)
        with pytest.raises(TimeoutError):  # while the first byte of "+OK" waits its turn
            client.recv(64)
        assert stop_within(proxy, 10)
        assert proxy_threads() == []
        client.settimeout(5)
        assert client.recv(64) == b""  # closed, not one byte of the reply sent
    assert proxy.bytes_down == 0


def test_clearing_drip_mid_reply_lets_the_rest_come_whole(
    redis: RedisServer, proxy: FaultProxy
) -> None:
    value = b"x" * 1000
    redis.command("SET", "long-drip", value)
    reply = bulk(value)
    with connect(proxy) as client:
        proxy.drip(byte_every=0.05)  # 50 s for the whole reply, were it not cleared
        client.sendall(resp("GET", "long-drip"))
        first = client.recv(1)
        proxy.clear()
        pieces = [first, *recv_pieces(client, len(reply) - 1)]
    assert b"".join(pieces) == reply
    assert len(pieces) < len(reply) // 10


@pytest.mark.parametrize("switch_off", ["drip(None)", "clear()"])
def test_drip_none_and_clear_switch_dripping_off(proxy: FaultProxy, switch_off: str) -> None:
    value = b"y" * 100
    with connect(proxy) as client:
        roundtrip(client, resp("SET", "whole", value), b"+OK\r\n")
        proxy.drip(byte_every=0.05)
        roundtrip(client, PING, PONG)  # still dripping: a byte every 0.05 s
        if switch_off == "clear()":
            proxy.clear()
        else:
            proxy.drip(None)
        client.sendall(resp("GET", "whole"))
        pieces = recv_pieces(client, len(bulk(value)))
    assert b"".join(pieces) == bulk(value)
    assert len(pieces) < len(bulk(value)) // 10  # dripped, it would be a piece a byte


def test_drip_rejects_a_negative_pause(proxy: FaultProxy) -> None:
    with pytest.raises(ValueError, match=">= 0"):
        proxy.drip(byte_every=-0.1)
    with connect(proxy) as client:  # the rejected switch changed nothing
        roundtrip(client, PING, PONG)


def test_drip_zero_forwards_byte_by_byte_without_pausing(
    redis: RedisServer, proxy: FaultProxy
) -> None:
    value = bytes(range(256)) * 4
    redis.command("SET", "no-pause", value)
    proxy.drip(byte_every=0)
    with connect(proxy) as client:
        roundtrip(client, resp("GET", "no-pause"), bulk(value))
    assert wait_until(lambda: proxy.bytes_down == len(bulk(value)))
