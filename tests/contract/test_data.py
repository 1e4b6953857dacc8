"""Entries that carry bytes: ``Message.data`` under every promise, on every backend."""

from __future__ import annotations

import os
from typing import Any

import pytest

from chatledger import Ack, ConfigError, InvalidMessage, Message, Store, assistant, tool, user
from tests.backends import BackendCase
from tests.conftest import OpenLedger

EVERY_BYTE = bytes(range(256)) * 4  # NUL, \xff, invalid UTF-8, JSON's quotes and escapes
MiB = 1024 * 1024


def test_data_comes_back_byte_for_byte_beside_messages_without(store: Store) -> None:
    batch = [
        user("a file", data=EVERY_BYTE, metadata={"kind": "upload"}),
        assistant("no data"),
        tool("result", tool_call_id="c1", data=b""),  # empty data is data, not None
        user("tail", data=b'"}\\u0000\x01\x02'),  # bytes that look like JSON and codec heads
    ]
    ack = store.session("s").append(batch)
    history = store.session("s").read()
    assert history.messages == batch
    assert [m.data for m in history] == [EVERY_BYTE, None, b"", b'"}\\u0000\x01\x02']
    assert all(type(m.data) is bytes for m in history if m.data is not None)
    assert (ack.first_seq, ack.last_seq) == (1, 4)


def test_a_batch_with_bad_data_stores_nothing(store: Store) -> None:
    session = store.session("s")
    session.append([user("before")])
    with pytest.raises(InvalidMessage, match="must be bytes or None, got bytearray") as caught:
        session.append([user("ok", data=b"x"), user("bad", data=bytearray(b"y"))])  # type: ignore[arg-type]
    assert caught.value.field == "messages[1].data"
    assert [m.text for m in session.read()] == ["before"]


@pytest.mark.parametrize("bad", [bytearray(b"x"), memoryview(b"x"), "text", [1, 2]])
def test_only_bytes_are_data(store: Store, bad: Any) -> None:
    with pytest.raises(InvalidMessage, match="bytes") as caught:
        store.session("s").append([user("x", data=bad)])
    assert caught.value.field == "messages[0].data"
    assert store.session("s").info() is None


def test_data_counts_towards_max_message_bytes(store: Store) -> None:
    session = store.session("s")
    with pytest.raises(InvalidMessage, match=r"over max_message_bytes=1,048,576") as caught:
        session.append([user("ok"), user("big", data=bytes(MiB))])
    assert caught.value.field == "messages[1]"
    assert session.info() is None
    fits = user("", data=bytes(MiB - 200))  # the JSON header takes the rest
    session.append([fits])
    assert session.read().messages == [fits]


def test_a_retry_with_data_is_deduplicated(store: Store) -> None:
    session = store.session("s")
    batch = [user("q", data=b"payload"), assistant("a", data=b"answer")]
    first = session.append(batch)
    again = session.append(batch)
    assert again == Ack(first.first_seq, first.last_seq, first.version, deduplicated=True,
                        ledger=first.ledger)
    assert session.read().messages == batch


def test_a_retry_is_known_by_its_ids_whatever_its_data(store: Store) -> None:
    # Promise 3 as for any field: the ids decide, the stored message stays.
    session = store.session("s")
    stored = user("q", data=b"first")
    session.append([stored])
    changed = Message(role="user", content="q", id=stored.id, created_at=stored.created_at,
                      data=b"second")
    assert session.append([changed]).deduplicated
    assert session.read().messages[0].data == b"first"


def test_entries_with_data_keep_order_through_trim_and_windows(store: Store) -> None:
    session = store.session("s")
    for n in range(6):
        session.append([user(str(n), data=bytes([n]) * n)])
    session.trim(keep_last=4)
    assert [m.data for m in session.read(last=2)] == [b"\x04" * 4, b"\x05" * 5]
    assert [(m.seq, m.data) for m in session.read(after=3, limit=1)] == [(4, b"\x03" * 3)]


def test_a_20_mb_entry_round_trips_with_a_raised_limit(open_ledger: OpenLedger) -> None:
    # A generous I/O timeout: a busy test machine may take seconds to move 20 MB twice.
    store = open_ledger(max_message_bytes=64 * MiB, timeout=30.0)
    payload = os.urandom(20 * 1000 * 1000)
    big = user("checkpoint", data=payload)
    batch = [user("before"), big, assistant("after")]  # one atomic batch around it
    session = store.session("big")
    assert session.append(batch).version == 3
    got = session.read(after=1, limit=1).messages
    assert got == [big] and got[0].data == payload
    assert session.append(batch).deduplicated  # a retry sends 20 MB again, stores nothing
    assert session.read().messages == batch


LIMITS: dict[str, int | None] = {
    "memory": None,
    "sqlite": 10**9 - 64 * 1024,
    "redis": 512 * MiB,
    "sentinel": 512 * MiB,
    "cluster": 512 * MiB,
    "postgres": 512 * MiB,
    "dynamodb": None,  # an entry over DynamoDB's 400 KB item is stored in parts
    "dynalite": None,
}


def test_a_limit_over_what_one_entry_can_hold_is_refused_at_open(
    backend: BackendCase, open_ledger: OpenLedger,
) -> None:
    limit = LIMITS[backend.name.removesuffix("-async")]
    if limit is None:  # memory: as much as the process holds
        assert open_ledger(max_message_bytes=2**40).session("s").info() is None
        return
    assert open_ledger(max_message_bytes=limit).session("s").info() is None
    with pytest.raises(ConfigError, match=rf"max_message_bytes={limit + 1:,} is over the "
                       rf"{limit:,} bytes one .* entry can hold"):
        open_ledger(max_message_bytes=limit + 1)
