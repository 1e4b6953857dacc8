"""The bytes at rest: a SQLite file and every key of a private Redis server,
read as an operator or a stolen backup would, hold no plaintext of an
encrypted store's messages."""

from __future__ import annotations

import uuid
from pathlib import Path

import redis

from chatledger import Keyring, Message, assistant, open_store, user
from chatledger.testing import RedisServer


def _conversation(marker: str) -> list[Message]:
    return [user(f"card {marker}", name=f"n{marker}", metadata={"m": marker}),
            assistant("ok", tool_calls=[{"id": "c", "name": "t", "args": {"a": marker}}]),
            Message(role="user", content="", data=f"b{marker}".encode())]


def _write(url: str, marker: str, **options: object) -> None:
    keyring = Keyring({"k1": Keyring.new_key()}, current="k1")
    with open_store(url, encryption=keyring, **options) as store:
        store.session("s").append(_conversation(marker))
        assert store.session("s").read().messages[0].text == f"card {marker}"


def test_a_sqlite_file_and_its_wal_hold_no_plaintext(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    _write(f"sqlite:///{tmp_path}/a.db", marker)
    files = list(tmp_path.iterdir())
    stored = b"".join(path.read_bytes() for path in files)
    assert b"k1" in stored  # the key id is stored in the clear
    assert marker.encode() not in stored, files
    # The same conversation unencrypted is found: the search can fail.
    with open_store(f"sqlite:///{tmp_path}/plain.db") as store:
        store.session("s").append(_conversation(marker))
    assert marker.encode() in (tmp_path / "plain.db").read_bytes() + b"".join(
        p.read_bytes() for p in tmp_path.glob("plain.db-*"))


def _every_value(client: redis.Redis) -> bytes:
    """Every key and value of the server, by type, as raw bytes."""
    out = []
    for key in client.scan_iter(count=1000):
        kind = client.type(key)
        out.append(key)
        if kind == b"string":
            out.append(client.get(key) or b"")
        elif kind == b"list":
            out.extend(client.lrange(key, 0, -1))
        elif kind == b"hash":
            for field, value in client.hgetall(key).items():
                out += [field, value]
        elif kind == b"zset":
            out.extend(client.zrange(key, 0, -1))
        elif kind == b"set":
            out.extend(client.smembers(key))
        else:
            raise AssertionError(f"a key of type {kind!r}: read it here too")
    return b"\n".join(out)


def test_every_redis_key_holds_no_plaintext() -> None:
    marker = uuid.uuid4().hex
    with RedisServer() as server:
        _write(server.url, marker, namespace="sealed")
        client = redis.Redis.from_url(server.url)
        try:
            assert marker.encode() not in _every_value(client)
            with open_store(server.url, namespace="plain") as store:
                store.session("s").append(_conversation(marker))
            assert marker.encode() in _every_value(client)
        finally:
            client.close()
