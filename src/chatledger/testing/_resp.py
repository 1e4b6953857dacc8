"""A minimal RESP2 client, written by hand: one command per connection.

It is all `RedisServer` needs to probe and drive its server, and it keeps the
testing kit free of the optional redis-py driver.
"""

from __future__ import annotations

import io
import socket
from collections.abc import Sequence
from typing import TypeAlias

RespReply: TypeAlias = "bytes | str | int | list[RespReply] | None"
"""A decoded RESP2 reply: simple string -> str, integer -> int, bulk string -> bytes
(None when null), array -> list (None when null). Error replies raise instead."""

CommandArg: TypeAlias = "str | bytes | int | float"


class RedisCommandError(RuntimeError):
    """The server answered a command with an error reply (``-ERR ...``)."""


def call(host: str, port: int, args: Sequence[CommandArg], timeout: float) -> RespReply:
    """Open a connection, send one command, read its reply, close."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(encode_command(args))
        with sock.makefile("rb") as stream:
            return read_reply(stream)


def is_server(host: str, port: int, pid: int, timeout: float) -> bool:
    """True if the process `pid` is the Redis answering PING on `host:port`."""
    try:
        if call(host, port, ["PING"], timeout) != "PONG":
            return False
        # Whoever grabbed the port first may be another redis-server: make sure it is ours.
        info = call(host, port, ["INFO", "server"], timeout)
    except (OSError, RedisCommandError):  # not listening yet, or still loading data
        return False
    return isinstance(info, bytes) and f"process_id:{pid}\r\n".encode() in info


def encode_command(args: Sequence[CommandArg]) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = _arg_bytes(arg)
        parts += [b"$%d\r\n" % len(data), data, b"\r\n"]
    return b"".join(parts)


def _arg_bytes(arg: CommandArg) -> bytes:
    if isinstance(arg, bytes):
        return arg
    if isinstance(arg, bool) or not isinstance(arg, str | int | float):
        # Like redis-py: a bool has no obvious wire form, so refuse to guess.
        raise TypeError(f"unsupported command argument {arg!r}")
    return str(arg).encode()


def read_reply(stream: io.BufferedIOBase) -> RespReply:
    line = _read_line(stream)
    kind, payload = line[:1], line[1:]
    if kind == b"+":
        return payload.decode()
    if kind == b"-":
        raise RedisCommandError(payload.decode())
    if kind == b":":
        return int(payload)
    if kind == b"$":
        return _read_bulk(stream, int(payload))
    if kind == b"*":
        count = int(payload)
        return None if count < 0 else [read_reply(stream) for _ in range(count)]
    raise ConnectionError(f"not a RESP2 reply: {line!r}")


def _read_line(stream: io.BufferedIOBase) -> bytes:
    line = stream.readline()
    if not line.endswith(b"\r\n"):
        raise ConnectionError("connection closed in the middle of a reply")
    return line[:-2]


def _read_bulk(stream: io.BufferedIOBase, length: int) -> bytes | None:
    if length < 0:
        return None
    data = stream.read(length + 2)
    if len(data) != length + 2 or not data.endswith(b"\r\n"):
        raise ConnectionError("connection closed in the middle of a bulk string")
    return data[:-2]
