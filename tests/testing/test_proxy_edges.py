"""FaultProxy at the edges: upstreams that never answer a connect, slow readers, misuse."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterator

import pytest

from chatledger.testing._proxy import FaultProxy
from chatledger.testing._redis_server import RedisServer
from tests.testing._sockets import (
    PING,
    PONG,
    bulk,
    connect,
    proxy_threads,
    resp,
    roundtrip,
    stop_within,
    wait_until,
)

pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")


@pytest.fixture
def deaf_port() -> Iterator[int]:
    """A loopback port whose listener's accept queue is full: a connect to it hangs.

    With a backlog of 0 the queue holds one connection; Linux drops the SYN of the next.
    """
    with socket.create_server(("127.0.0.1", 0), backlog=0) as listener, \
            socket.create_connection(listener.getsockname(), timeout=5):
        yield listener.getsockname()[1]


def test_an_upstream_connect_that_hangs_resets_the_client_after_the_timeout(
    deaf_port: int,
) -> None:
    with FaultProxy("127.0.0.1", deaf_port, connect_timeout=0.1) as proxy:
        with connect(proxy) as client, pytest.raises(ConnectionResetError):
            client.recv(64)
        assert proxy.active_connections == 0
    assert proxy_threads() == []


def test_stop_ends_an_upstream_connect_that_would_hang_for_ages(deaf_port: int) -> None:
    proxy = FaultProxy("127.0.0.1", deaf_port, connect_timeout=600).start()
    with connect(proxy) as client:
        assert wait_until(lambda: proxy.connections_accepted == 1)
        assert stop_within(proxy, 10)
        assert proxy_threads() == []
        with pytest.raises(ConnectionResetError):
            client.recv(64)


def test_an_upstream_address_that_cannot_be_dialled_resets_the_client() -> None:
    # Link-local IPv6 without an interface: connect() fails at once, no packet leaves.
    with FaultProxy("fe80::1", 6379) as proxy:
        with pytest.raises(ConnectionResetError), connect(proxy) as client:
            client.recv(64)
        assert proxy.connections_accepted == 1


def test_a_client_that_aborts_gets_the_upstream_connection_aborted_too() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(5)
        with FaultProxy("127.0.0.1", listener.getsockname()[1]) as proxy:
            client = connect(proxy)
            server_side, _ = listener.accept()
            with server_side:
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.close()  # with linger 0: RST, not FIN
                server_side.settimeout(5)
                with pytest.raises(ConnectionResetError):
                    server_side.recv(64)
            assert wait_until(lambda: proxy.active_connections == 0)
        assert proxy.faults_injected == 0  # the client's doing, not a fault


def test_a_reader_slower_than_the_server_gets_the_whole_reply(
    redis: RedisServer, proxy: FaultProxy
) -> None:
    # 16 MiB: four times what the proxy's send buffer can grow to (net.ipv4.tcp_wmem),
    # so the proxy must wait for the reader, whose tiny window drains a few KiB a read.
    value = bytes(range(256)) * 65536
    redis.command("SET", "slow-reader", value)
    expected = bulk(value)
    with socket.socket() as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before the handshake
        client.settimeout(5)
        client.connect((proxy.host, proxy.port))
        client.sendall(resp("GET", "slow-reader"))
        received = bytearray()
        while len(received) < len(expected) and (piece := client.recv(4096)):
            received += piece
    assert received == expected
    redis.command("DEL", "slow-reader")


def test_stop_before_start_is_harmless(redis: RedisServer) -> None:
    proxy = FaultProxy(redis.host, redis.port)
    proxy.stop()
    assert proxy.active_connections == 0
    assert proxy_threads() == []


def test_cut_reply_rejects_a_negative_length(proxy: FaultProxy) -> None:
    with pytest.raises(ValueError, match="after_bytes must be >= 0"):
        proxy.cut_reply(after_bytes=-1)
    with connect(proxy) as client:  # nothing was armed
        roundtrip(client, PING, PONG)
    assert proxy.faults_injected == 0


@pytest.mark.parametrize("seconds", [-1.0, float("nan"), float("inf")])
def test_latency_and_drip_refuse_what_a_relay_could_not_sleep(proxy: FaultProxy,
                                                              seconds: float) -> None:
    with pytest.raises(ValueError, match="latency must be a finite number of seconds"):
        proxy.latency(seconds)
    with pytest.raises(ValueError, match="byte_every must be a finite number of seconds"):
        proxy.drip(seconds)
    with connect(proxy) as client:  # nothing was set: traffic flows
        roundtrip(client, PING, PONG)
