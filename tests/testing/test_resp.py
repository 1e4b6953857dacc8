"""The hand-written RESP2 client against scripted loopback servers and a real redis-server."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from chatledger.testing._redis_server import RedisServer
from chatledger.testing._resp import call, is_server


@contextmanager
def scripted_server(reply: bytes) -> Iterator[int]:
    """A loopback server that answers one connection with `reply`, then closes it."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(5)

        def answer() -> None:
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)  # the request: whatever it was, the script is the reply
                conn.sendall(reply)

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        yield listener.getsockname()[1]
        thread.join(5)
        assert not thread.is_alive()


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (b"+PON", "in the middle of a reply"),
        (b"$10\r\nabc", "in the middle of a bulk string"),
        (b"$3\r\nabcXY", "in the middle of a bulk string"),  # no CRLF where it must be
        (b"*2\r\n:1\r\n", "in the middle of a reply"),
        (b"?what\r\n", "not a RESP2 reply"),
    ],
)
def test_a_broken_reply_is_a_connection_error(reply: bytes, message: str) -> None:
    with scripted_server(reply) as port, pytest.raises(ConnectionError, match=message):
        call("127.0.0.1", port, ["PING"], timeout=5)


def test_a_server_that_does_not_answer_pong_is_not_ours() -> None:
    with scripted_server(b"+HELLO\r\n") as port:
        assert not is_server("127.0.0.1", port, pid=1, timeout=5)


def test_is_server_tells_the_server_by_its_process_id(redis: RedisServer) -> None:
    assert is_server(redis.host, redis.port, redis.pid, timeout=5)
    assert not is_server(redis.host, redis.port, redis.pid + 1, timeout=5)
