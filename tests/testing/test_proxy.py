"""FaultProxy against a private redis-server (and a tiny echo server), over real sockets."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import pytest

from chatledger.testing._proxy import FaultProxy
from chatledger.testing._redis_server import RedisServer, free_port
from tests.testing._sockets import (
    PING,
    PONG,
    bulk,
    connect,
    proxy_threads,
    recv_exactly,
    recv_until_eof,
    resp,
    roundtrip,
    stop_within,
    wait_until,
)

# A crash in a proxy thread must fail the test, not just print a warning.
pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")


def test_addresses_and_lifecycle_errors(redis: RedisServer) -> None:
    proxy = FaultProxy(redis.host, redis.port)
    with pytest.raises(RuntimeError, match="not started"):
        _ = proxy.port
    with proxy:
        assert proxy.host == "127.0.0.1"
        assert proxy.url_netloc == f"127.0.0.1:{proxy.port}"
        assert proxy.port != redis.port
        with pytest.raises(RuntimeError, match="already started"):
            proxy.start()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", proxy.port), timeout=2).close()


def test_forwards_small_and_large_payloads(proxy: FaultProxy) -> None:
    value = bytes(range(256)) * 4096  # 1 MiB: many chunks and partial sends
    with connect(proxy) as client:
        roundtrip(client, PING, PONG)
        roundtrip(client, resp("SET", "big", value), b"+OK\r\n")
        roundtrip(client, resp("GET", "big"), bulk(value))


def test_serves_concurrent_connections_independently(proxy: FaultProxy) -> None:
    clients = [connect(proxy) for _ in range(5)]
    try:
        for i, client in enumerate(clients):
            client.sendall(resp("ECHO", f"client-{i}"))
        for i, client in enumerate(clients):
            expected = bulk(f"client-{i}".encode())
            assert recv_exactly(client, len(expected)) == expected
        assert wait_until(lambda: proxy.active_connections == 5)
    finally:
        for client in clients:
            client.close()


def test_counters_track_connections_bytes_and_faults(proxy: FaultProxy) -> None:
    with connect(proxy) as client:
        roundtrip(client, PING, PONG)
        assert wait_until(lambda: (proxy.bytes_up, proxy.bytes_down) == (len(PING), len(PONG)))
        assert proxy.connections_accepted == 1
        assert proxy.faults_injected == 0
        assert proxy.close_all() == 1
    assert proxy.faults_injected == 1
    assert proxy.close_all() == 0


def test_close_all_sends_eof_and_new_connections_still_work(proxy: FaultProxy) -> None:
    with connect(proxy) as client:
        roundtrip(client, PING, PONG)
        proxy.close_all()
        assert client.recv(64) == b""
    with connect(proxy) as client:
        roundtrip(client, PING, PONG)


def test_reset_all_aborts_connections(proxy: FaultProxy) -> None:
    with connect(proxy) as client:
        roundtrip(client, PING, PONG)
        assert proxy.reset_all() == 1
        with pytest.raises(ConnectionResetError):
            client.recv(64)


def test_blackhole_holds_traffic_until_clear(proxy: FaultProxy) -> None:
    with connect(proxy) as held, connect(proxy, timeout=0.3) as late:
        roundtrip(held, PING, PONG)
        proxy.blackhole()
        held.sendall(PING)
        held.settimeout(0.3)
        with pytest.raises(TimeoutError):
            held.recv(64)
        late.sendall(PING)  # new connections are accepted, and held just the same
        with pytest.raises(TimeoutError):
            late.recv(64)
        assert wait_until(lambda: proxy.connections_accepted == 2)
        proxy.clear()
        held.settimeout(5)
        assert recv_exactly(held, len(PONG)) == PONG  # the held request goes through late
    with connect(proxy) as client:
        roundtrip(client, PING, PONG)


def test_latency_delays_each_direction(proxy: FaultProxy) -> None:
    injected = 0.1
    with connect(proxy) as client:
        proxy.latency(injected)
        started = time.monotonic()
        roundtrip(client, PING, PONG)
        # One chunk up and one down, each held at least `injected`: this cannot flake.
        assert time.monotonic() - started >= 2 * injected
        proxy.clear()
        roundtrip(client, PING, PONG)
    with pytest.raises(ValueError, match=">= 0"):
        proxy.latency(-1)


def test_cut_reply_forwards_half_then_closes(redis: RedisServer, proxy: FaultProxy) -> None:
    value = b"x" * 1000
    redis.command("SET", "cut", value)
    full = bulk(value)
    with connect(proxy) as client:
        proxy.cut_reply()
        client.sendall(resp("GET", "cut"))
        partial = recv_until_eof(client)
    assert 0 < len(partial) < len(full)
    assert full.startswith(partial)
    assert proxy.faults_injected == 1
    with connect(proxy) as client:  # one-shot: the next reply is whole
        roundtrip(client, resp("GET", "cut"), full)


def test_cut_reply_after_given_bytes(redis: RedisServer, proxy: FaultProxy) -> None:
    redis.command("SET", "cut5", "hello world")
    with connect(proxy) as client:
        proxy.cut_reply(after_bytes=5)
        client.sendall(resp("GET", "cut5"))
        assert recv_until_eof(client) == bulk(b"hello world")[:5]


def test_lose_next_reply_applies_command_but_loses_reply(
    redis: RedisServer, proxy: FaultProxy
) -> None:
    redis.command("DEL", "lost")
    with connect(proxy) as client:
        proxy.lose_next_reply()
        client.sendall(resp("SET", "lost", "applied"))
        with pytest.raises(ConnectionResetError):
            client.recv(64)
    assert redis.command("GET", "lost") == b"applied"  # checked without the proxy
    assert proxy.faults_injected == 1
    with connect(proxy) as client:  # one-shot
        roundtrip(client, resp("SET", "lost", "again"), b"+OK\r\n")


def test_clear_disarms_one_shot_faults(proxy: FaultProxy) -> None:
    proxy.lose_next_reply()
    proxy.cut_reply()
    proxy.clear()
    with connect(proxy) as client:
        roundtrip(client, PING, PONG)
    assert proxy.faults_injected == 0


def test_refuse_resets_existing_and_new_connections(proxy: FaultProxy) -> None:
    with connect(proxy) as existing:
        roundtrip(existing, PING, PONG)
        proxy.refuse()
        with pytest.raises(ConnectionResetError):
            existing.recv(64)
    # The reset may even beat connect() itself to the client.
    with pytest.raises(ConnectionResetError), connect(proxy) as refused:
        refused.recv(64)
    assert proxy.faults_injected == 2
    proxy.clear()
    with connect(proxy) as client:
        roundtrip(client, PING, PONG)


def test_reset_randomly_with_certainty_resets_every_connection(proxy: FaultProxy) -> None:
    proxy.reset_randomly(1.0)
    for _ in range(3):
        with connect(proxy) as client:
            client.sendall(PING)
            with pytest.raises(ConnectionResetError):
                client.recv(64)
    assert proxy.faults_injected == 3
    proxy.reset_randomly(0.0)
    with connect(proxy) as client:
        for _ in range(20):
            roundtrip(client, PING, PONG)
    with pytest.raises(ValueError, match="between 0 and 1"):
        proxy.reset_randomly(1.5)


def _outcomes_with_seed(redis: RedisServer, seed: int) -> list[bool]:
    outcomes = []
    with FaultProxy(redis.host, redis.port) as proxy:
        proxy.reset_randomly(0.3, seed=seed)
        for _ in range(30):
            with connect(proxy) as client:
                client.sendall(PING)
                try:
                    outcomes.append(client.recv(64) == PONG)
                except ConnectionResetError:
                    outcomes.append(False)
    return outcomes


def test_reset_randomly_is_reproducible_with_a_seed(redis: RedisServer) -> None:
    first = _outcomes_with_seed(redis, seed=7)
    assert first == _outcomes_with_seed(redis, seed=7)
    assert True in first
    assert False in first


def test_unreachable_upstream_resets_the_client() -> None:
    with FaultProxy("127.0.0.1", free_port()) as proxy:
        with pytest.raises(ConnectionResetError), connect(proxy) as client:
            client.recv(64)
        assert proxy.connections_accepted == 1


def _echo_until_eof(listener: socket.socket) -> None:
    conn, _ = listener.accept()
    with conn:
        conn.sendall(recv_until_eof(conn))


def test_half_close_is_forwarded_and_reply_still_flows() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(5)
        echo = threading.Thread(target=_echo_until_eof, args=(listener,), daemon=True)
        echo.start()
        with FaultProxy("127.0.0.1", listener.getsockname()[1]) as proxy, connect(proxy) as client:
            client.sendall(b"hello, ")
            client.sendall(b"world")
            client.shutdown(socket.SHUT_WR)
            assert recv_until_eof(client) == b"hello, world"
        echo.join(5)
        assert not echo.is_alive()


def test_stop_finishes_with_blackholed_connections(redis: RedisServer) -> None:
    proxy = FaultProxy(redis.host, redis.port).start()
    proxy.blackhole()
    clients = [connect(proxy) for _ in range(5)]
    try:
        for client in clients:
            client.sendall(PING)
        assert wait_until(lambda: proxy.active_connections == 5)
        assert stop_within(proxy, 10)
        assert proxy_threads() == []
        for client in clients:
            assert client.recv(64) == b""  # closed gracefully, request never forwarded
    finally:
        for client in clients:
            client.close()
    assert proxy.bytes_up == 0


def test_stop_finishes_while_chunks_wait_out_latency(redis: RedisServer) -> None:
    proxy = FaultProxy(redis.host, redis.port).start()
    proxy.latency(600)
    with connect(proxy) as client:
        client.sendall(PING)
        assert wait_until(lambda: proxy.active_connections == 1)
        assert stop_within(proxy, 10)
    assert proxy_threads() == []


def _hammer(proxy: FaultProxy, until: float, successes: list[int]) -> None:
    done = 0
    while time.monotonic() < until:
        try:
            with connect(proxy, timeout=0.2) as client:
                for _ in range(20):
                    roundtrip(client, PING, PONG)
                    done += 1
        except (OSError, AssertionError):  # the faults at work: reconnect and go on
            pass
    successes.append(done)


def test_faults_switch_safely_under_concurrent_traffic(proxy: FaultProxy) -> None:
    successes: list[int] = []
    until = time.monotonic() + 1.0
    workers = [threading.Thread(target=_hammer, args=(proxy, until, successes)) for _ in range(4)]
    for worker in workers:
        worker.start()
    switches: list[Callable[[], object]] = [
        lambda: proxy.reset_randomly(0.05, seed=1),
        lambda: proxy.latency(0.002),
        proxy.lose_next_reply,
        proxy.cut_reply,
        proxy.reset_all,
        lambda: proxy.blackhole(True),
        proxy.clear,
    ]
    while time.monotonic() < until:
        for switch in switches:
            switch()
            time.sleep(0.01)  # pacing the chaos, not waiting for a result
    for worker in workers:
        worker.join(10)
    proxy.clear()
    assert not any(worker.is_alive() for worker in workers)
    assert sum(successes) > 0
    assert proxy.faults_injected > 0
    with connect(proxy) as client:
        roundtrip(client, PING, PONG)
