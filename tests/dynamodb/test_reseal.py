"""Key rotation's reseal on DynamoDB: entries rewritten in place, split ones included."""

from __future__ import annotations

from typing import Any

import pytest

from chatledger import BackendError, user
from chatledger._backends.contract import ReadQuery
from chatledger._backends.dynamodb.conditions import Refused
from chatledger._backends.dynamodb.transactions import INLINE, TX_BYTES
from tests.dynamodb.conftest import OpenDynamo, items


def _stored(store: Any, session: str) -> list[bytes]:
    return [blob for _, blob in store._backend.read(session, ReadQuery(last=10)).entries]


def _parts(raw: Any, url: str) -> int:
    return sum(1 for item in items(raw, url) if item["sk"]["S"].startswith("p"))


def test_an_entry_is_resealed_into_parts_and_back_keeping_the_version(
        open_dynamo: OpenDynamo, raw: Any, dynamodb_url: str) -> None:
    store = open_dynamo()
    store.session("s").append([user("one"), user("two")])
    before = store._backend.info("s")
    old = _stored(store, "s")
    big = b"x" * (2 * INLINE + 7)
    assert store._backend.reseal("s", [(1, old[0], big), (2, b"not stored", b"y")]) == 1
    assert _stored(store, "s") == [big, old[1]]
    assert _parts(raw, dynamodb_url) == 2
    assert store._backend.info("s") == before  # version, times, ledger: as they were
    assert store._backend.reseal("s", [(1, old[0], b"z")]) == 0  # no longer the old bytes
    assert store._backend.reseal("s", [(1, big, b"small")]) == 1
    assert _stored(store, "s") == [b"small", old[1]]
    assert _parts(raw, dynamodb_url) == 0  # the old parts went after the commit


def test_a_reseal_too_big_for_one_transaction_is_refused_and_changes_nothing(
        open_dynamo: OpenDynamo) -> None:
    store = open_dynamo()
    store.session("s").append([user("one")])
    old = _stored(store, "s")
    with pytest.raises(BackendError, match="entry 1 of session 's' sealed again is"):
        store._backend.reseal("s", [(1, old[0], b"x" * (TX_BYTES - INLINE + 1))])
    assert _stored(store, "s") == old


def test_trimmed_entries_and_absent_sessions_are_left_alone(open_dynamo: OpenDynamo) -> None:
    store = open_dynamo()
    store.session("s").append([user("one"), user("two"), user("three")])
    old = _stored(store, "s")
    store.session("s").trim(keep_last=1)
    assert store._backend.reseal("s", [(1, old[0], b"a"), (3, old[2], b"c")]) == 1
    assert _stored(store, "s") == [b"c"]
    assert store._backend.reseal("gone", [(1, old[0], b"a")]) == 0


def test_many_entries_go_in_several_transactions(open_dynamo: OpenDynamo) -> None:
    store = open_dynamo()
    store.session("s").append([user(f"m{i}") for i in range(120)])
    old = store._backend.read("s", ReadQuery(last=200)).entries
    assert store._backend.reseal("s", [(seq, blob, blob + b"!") for seq, blob in old]) == 120
    assert [blob for _, blob in store._backend.read("s", ReadQuery(last=200)).entries] == [
        blob + b"!" for _, blob in old]


def test_an_entry_changed_under_a_reseal_is_left_as_it_became(open_dynamo: OpenDynamo) -> None:
    store = open_dynamo()
    store.session("s").append([user("one")])
    old = _stored(store, "s")
    backend = store._backend
    transact = backend._transact

    def rewritten_first(ops: list[dict[str, Any]]) -> Refused | None:
        backend._transact = transact
        backend.corrupt_entry("s", 1, b"written meanwhile")  # the condition now fails
        return transact(ops)

    backend._transact = rewritten_first
    assert backend.reseal("s", [(1, old[0], b"new")]) == 0
    assert _stored(store, "s") == [b"written meanwhile"]
