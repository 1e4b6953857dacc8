"""forget_user after the user's session expired and its id was written again by another.

A session that expires keeps its entries and id items (they carry no TTL), and
the next writer of its id starts a new ledger over them: its entries overwrite
the old ones of the same sequence numbers, the rest stay, unseen. When that
writer was another user (or untagged), forget_user met a meta item that no
longer names the user, deleted nothing, removed the user's index item and
reported the session already gone: the user's older messages beyond the new
session's length, and their id items, stayed in the table with nothing left to
find them by.
"""
from __future__ import annotations

from typing import Any

import pytest

from chatledger import user
from chatledger._backends.dynamodb.layout import partition
from tests.dynamodb.conftest import Opener, items

OLD = 4  # the user's messages, more than the new session's


@pytest.mark.parametrize("other", ["v", None], ids=["another-user", "untagged"])
@pytest.mark.parametrize("size", [1, 60], ids=["small", "large"])
def test_forget_user_takes_what_is_left_of_an_expired_session_written_again(
        opener: Opener, raw: Any, dynamodb_url: str, namespace: str, other: str | None,
        size: int) -> None:
    clock = [1_800_000_000.0]
    store = opener(ttl=60, clock=lambda: clock[0])
    old = store.session("s", user="u").append([user(f"u secret {i}") for i in range(OLD)])
    clock[0] += 120  # expired: the next writer of "s" starts a new ledger over it
    new = store.session("s", user=other).append([user(f"hello {i}") for i in range(size)])
    assert new.ledger != old.ledger and new.first_seq == 1

    def scan() -> list[dict[str, Any]]:
        return [item for item in items(raw, dynamodb_url)
                if item["pk"]["S"] == partition(namespace, "s")]

    assert any(item["ledger"]["S"] == old.ledger for item in scan())  # the leftovers
    report = store.forget_user("u")
    assert report.complete and report.already_gone == ("s",) and report.deleted == ()
    left = scan()
    assert [item["sk"]["S"] for item in left if item["ledger"]["S"] != new.ledger] == []
    assert not any(b"u secret" in bytes(item.get("b", {}).get("B", b"")) for item in left)
    assert store._backend.user_sessions("u") == []
    # The other's session is whole.
    assert [m.text for m in store.session("s").read()] == [f"hello {i}" for i in range(size)]
    assert len(left) == 1 + 2 * size
