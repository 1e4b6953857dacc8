"""What a saver knows of a namespace's head as its own writes are acknowledged.

LangGraph stores two tasks' writes at once, so their acknowledgements reach
the saver in either order; a put appends at the version the saver knows
without reading first only when every version since is its own.
"""

from __future__ import annotations

import asyncio
import threading

from chatledger._results import Ack
from chatledger.langgraph._entries import CheckpointEntry
from chatledger.langgraph._heads import Head, Heads
from chatledger.langgraph._inflight import InFlight

SESSION = "g:1:t:"


def _heads(version: int, ledger: str = "L") -> Heads:
    heads = Heads()
    entry = CheckpointEntry("c1", None, ("msgpack", b""), ("msgpack", b""), [], {}, seq=version)
    heads.remember(SESSION, Head(entry, version, ledger, None))
    return heads


def _version(heads: Heads) -> int | None:
    head = heads.get(SESSION)
    return None if head is None else head.version


def test_writes_acknowledged_in_order_move_the_version_on() -> None:
    heads = _heads(10)
    heads.appended(SESSION, Ack(11, 11, 11, ledger="L"), 1)
    heads.appended(SESSION, Ack(12, 13, 13, ledger="L"), 2)
    assert _version(heads) == 13


def test_writes_acknowledged_out_of_order_move_it_on_once_the_gap_is_filled() -> None:
    heads = _heads(10)
    heads.appended(SESSION, Ack(12, 12, 12, ledger="L"), 1)
    assert _version(heads) == 10  # version 11 may be anyone's
    heads.appended(SESSION, Ack(11, 11, 11, ledger="L"), 1)
    assert _version(heads) == 12
    assert heads.get(SESSION).ahead == frozenset()  # type: ignore[union-attr]


def test_a_gap_no_write_of_ours_fills_keeps_the_version() -> None:
    heads = _heads(10)
    heads.appended(SESSION, Ack(13, 13, 13, ledger="L"), 1)  # 11..12: another writer's
    assert _version(heads) == 10


def test_a_write_the_known_version_counts_changes_nothing() -> None:
    heads = _heads(10)
    heads.appended(SESSION, Ack(9, 9, 9, ledger="L"), 1)  # acknowledged before the put
    assert _version(heads) == 10


def test_a_put_takes_over_the_writes_acknowledged_past_it() -> None:
    heads = _heads(10)
    heads.appended(SESSION, Ack(13, 13, 13, ledger="L"), 1)  # ahead of 10
    entry = CheckpointEntry("c2", "c1", ("msgpack", b""), ("msgpack", b""), [], {}, seq=12)
    heads.remember(SESSION, Head(entry, 12, "L", None))  # the put stored 11..12
    assert _version(heads) == 13


def test_a_put_on_another_ledger_takes_over_nothing() -> None:
    heads = _heads(10)
    heads.appended(SESSION, Ack(13, 13, 13, ledger="L"), 1)
    entry = CheckpointEntry("c2", None, ("msgpack", b""), ("msgpack", b""), [], {}, seq=12)
    heads.remember(SESSION, Head(entry, 12, "M", None))
    assert _version(heads) == 12


def test_a_write_on_another_ledger_forgets_the_head() -> None:
    heads = _heads(10)
    heads.appended(SESSION, Ack(11, 11, 11, ledger="M"), 1)
    assert heads.get(SESSION) is None


def test_a_deduplicated_write_past_the_known_version_forgets_the_head() -> None:
    heads = _heads(10)
    heads.appended(SESSION, Ack(5, 5, 10, ledger="L", deduplicated=True), 1)
    assert _version(heads) == 10
    heads.appended(SESSION, Ack(5, 5, 12, ledger="L", deduplicated=True), 1)
    assert heads.get(SESSION) is None


def test_a_put_waits_for_the_writes_in_flight_on_its_session() -> None:
    in_flight = InFlight()
    token = in_flight.begin(SESSION)
    done = threading.Event()

    def put() -> None:
        in_flight.settled(SESSION, timeout=30)
        done.set()

    waiter = threading.Thread(target=put)
    waiter.start()
    assert not done.wait(0.05)  # still waiting: the write is in flight
    in_flight.end(SESSION, token)
    waiter.join(30)
    assert done.is_set()
    in_flight.settled(SESSION, timeout=0)  # nothing in flight: returns at once


def test_a_coroutine_put_waits_for_them_without_blocking_the_loop() -> None:
    in_flight = InFlight()
    token = in_flight.begin(SESSION)

    async def put() -> bool:
        asyncio.get_running_loop().call_soon(in_flight.end, SESSION, token)  # the loop runs on
        await in_flight.asettled(SESSION, timeout=30)
        ended = token.done()
        await in_flight.asettled(SESSION, timeout=0)
        return ended

    assert asyncio.run(put())
