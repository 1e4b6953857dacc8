"""forget_user against a large append that creates the user's session, on both paths.

A large append (over one transaction) takes a lease on a placeholder meta item,
writes its items in fenced transactions, then commits the meta item. These tests
stop such an append after its lease, its first chunk or its last one,
deterministically (``interleave``: a wrapped request of the writer's backend),
and run forget_user there: the table, scanned behind the store, must hold
nothing of the user once forget_user says it is complete. The placeholder and
its index item are written in one transaction (``_take_lease``). When the index
item came only with the commit, forget_user found nothing there, reported
complete, and left the placeholder (the user's id) and the chunks' messages in
the table with no index item to find them by: for good if the writer died
there (it does, in the last test): the placeholder has no TTL and is in no
listing, so only a delete of that session id, or an append to it after the lease
expired, would have cleaned them.
"""
from __future__ import annotations

import inspect
from typing import Any

import pytest

from chatledger import BackendUnavailable, user
from chatledger._backends._dynamodb_layout import partition, user_partition
from tests.dynamodb.conftest import Opener, interleave, items, native, retrying

BATCH = 60  # 120 entry and id items: two fenced chunks (99 and 21) before the commit


def _first_chunk(operation: str, kwargs: dict[str, Any], fired: list[Any]) -> bool:
    """Whether this request is a large append's first fenced chunk (its first operation
    the check that the lease is still the writer's), and nothing ran there yet."""
    return _chunk(operation, kwargs) and not fired


def _chunk(operation: str, kwargs: dict[str, Any]) -> bool:
    if operation != "transact_write_items":
        return False
    check = kwargs["TransactItems"][0].get("ConditionCheck", {})
    return bool(check.get("ConditionExpression") == "lease = :lease")


def _lease(operation: str, kwargs: dict[str, Any]) -> bool:
    """Whether this request puts a new session's placeholder, leased."""
    if operation != "transact_write_items":
        return False
    put = kwargs["TransactItems"][0].get("Put", {})
    return "lease" in put.get("Item", {})


def _nth_write(n: int) -> Any:
    """A picker of the large append's n-th write: 0 its lease, then its chunks (n >= 1)."""
    seen: list[None] = []

    def pick(operation: str, kwargs: dict[str, Any], fired: list[Any]) -> bool:
        if fired or not (_lease(operation, kwargs) or _chunk(operation, kwargs)):
            return False
        seen.append(None)
        return len(seen) == n + 1

    return pick


def _of(raw: Any, url: str, namespace: str, session: str, owner: str) -> list[str]:
    """The sort keys of every item of ``session`` and of ``owner``'s index, in the table."""
    keys = (partition(namespace, session), user_partition(namespace, owner))
    return sorted(item["sk"]["S"] for item in items(raw, url) if item["pk"]["S"] in keys)


@pytest.mark.parametrize("after", [0, 1, 2], ids=["lease", "first-chunk", "last-chunk"])
def test_forget_user_between_the_chunks_of_a_new_session_leaves_nothing(
        opener: Opener, raw: Any, dynamodb_url: str, namespace: str, after: int) -> None:
    """The erasure finds the placeholder through the index, deletes it and the chunks
    that landed; the writer's next chunk (or its commit) fails its fence, and the
    append starts over: a new session, written after the erasure and indexed, which
    the next forget_user takes."""
    writer, eraser = opener(retry=retrying()), opener()

    def erase() -> Any:
        """forget_user, then a Scan before the writer goes on: (report, what is left)."""
        forgetting = native(eraser).forget_user("u")
        if not inspect.isawaitable(forgetting):
            return forgetting, _of(raw, dynamodb_url, namespace, "s", "u")

        async def then_scan() -> Any:
            return await forgetting, _of(raw, dynamodb_url, namespace, "s", "u")

        return then_scan()

    fired = interleave(writer, _nth_write(after), erase)
    ack = writer.session("s", user="u").append([user(f"secret {i}") for i in range(BATCH)])
    [(report, left)] = fired
    assert report.complete and report.deleted + report.already_gone == ("s",)
    assert left == []  # nothing of the user, the moment forget_user returned complete
    assert (ack.first_seq, ack.last_seq, ack.deduplicated) == (1, BATCH, False)
    assert writer._backend.user_sessions("u") == ["s"]  # the append that came after
    assert eraser.forget_user("u").deleted == ("s",)
    assert _of(raw, dynamodb_url, namespace, "s", "u") == []


def test_forget_user_finds_a_new_session_whose_large_append_died_midway(
        opener: Opener, raw: Any, dynamodb_url: str, namespace: str) -> None:
    """The writer dies after its first chunk: a placeholder no reader sees, 99 items
    of the user's messages, and (now) the index item naming them all."""
    writer, eraser = opener(), opener()

    def die() -> Any:
        raise BackendUnavailable("the writer died between its chunks")

    interleave(writer, _first_chunk, die)
    with pytest.raises(BackendUnavailable, match="died between its chunks"):
        writer.session("s", user="u").append([user(f"secret {i}") for i in range(BATCH)])
    assert eraser.session("s").info() is None
    assert len(_of(raw, dynamodb_url, namespace, "s", "u")) == 1 + 99 + 1
    report = eraser.forget_user("u")
    assert report.complete and report.already_gone == ("s",)
    assert _of(raw, dynamodb_url, namespace, "s", "u") == []
