"""forget_user against a large append that creates the user's session, on both paths.

A large append (over one transaction) takes a lease on a placeholder meta item,
writes its items in fenced transactions, then commits the meta item. These tests
stop such an append after its first chunk has landed, deterministically (a
wrapped request of the writer's backend), and run forget_user there: the table,
scanned behind the store, must hold nothing of the user once forget_user says it
is complete. The placeholder and its index item are written in one transaction
(``_take_lease``): before that, the index named the session only at the commit,
so forget_user found nothing, reported complete, and left the placeholder (the
user's id) and the first chunk's messages in the table, with no index item to
find them by, for good if the writer died there.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from chatledger import BackendUnavailable, user
from chatledger._backends._dynamodb_layout import partition, user_partition
from tests.dynamodb.conftest import Opener, items, retrying

BATCH = 60  # 120 entry and id items: two fenced chunks (99 and 21) before the commit


def _native(store: Any) -> Any:
    """The store itself: the async one behind tests.blocking's view, or the sync one."""
    return getattr(store, "_target", store)


def _is_first_chunk(operation: str, kwargs: dict[str, Any], fired: list[Any]) -> bool:
    """Whether this request was a large append's first fenced chunk (its first
    operation the check that the lease is still the writer's)."""
    if operation != "transact_write_items" or fired:
        return False
    check = kwargs["TransactItems"][0].get("ConditionCheck", {})
    return bool(check.get("ConditionExpression") == "lease = :lease")


def _after_first_chunk(store: Any, action: Callable[[], Any]) -> list[Any]:
    """Run ``action`` (awaited on the async path) once, right after the first fenced
    chunk of a large append through ``store`` landed, before the writer goes on; its
    result is appended to the list returned."""
    io = store._backend.io  # the request seam, the same object behind the blocking view
    call = io.call
    fired: list[Any] = []
    if inspect.iscoroutinefunction(call):
        async def spy_async(operation: str, **kwargs: Any) -> Any:
            reply = await call(operation, **kwargs)
            if _is_first_chunk(operation, kwargs, fired):
                result = action()
                fired.append(await result if inspect.isawaitable(result) else result)
            return reply

        io.call = spy_async
    else:
        def spy(operation: str, **kwargs: Any) -> Any:
            reply = call(operation, **kwargs)
            if _is_first_chunk(operation, kwargs, fired):
                fired.append(action())
            return reply

        io.call = spy
    return fired


def _of(raw: Any, url: str, namespace: str, session: str, owner: str) -> list[str]:
    """The sort keys of every item of ``session`` and of ``owner``'s index, in the table."""
    keys = (partition(namespace, session), user_partition(namespace, owner))
    return sorted(item["sk"]["S"] for item in items(raw, url) if item["pk"]["S"] in keys)


def test_forget_user_between_the_chunks_of_a_new_session_leaves_nothing(
        opener: Opener, raw: Any, dynamodb_url: str, namespace: str) -> None:
    """The erasure finds the placeholder through the index, deletes it and the first
    chunk; the writer's next chunk fails its fence, and the append starts over: a new
    session, written after the erasure and indexed, which the next forget_user takes."""
    writer, eraser = opener(retry=retrying()), opener()
    seen: list[list[str]] = []

    def erase() -> Any:
        async def erased() -> Any:
            report = await _native(eraser).forget_user("u")
            seen.append(_of(raw, dynamodb_url, namespace, "s", "u"))
            return report

        if inspect.iscoroutinefunction(_native(eraser).forget_user):
            return erased()
        report = eraser.forget_user("u")
        seen.append(_of(raw, dynamodb_url, namespace, "s", "u"))
        return report

    fired = _after_first_chunk(writer, erase)
    ack = writer.session("s", user="u").append([user(f"secret {i}") for i in range(BATCH)])
    [report] = fired
    assert report.complete and report.deleted + report.already_gone == ("s",)
    assert seen == [[]]  # nothing of the user, the moment forget_user returned complete
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

    _after_first_chunk(writer, die)
    with pytest.raises(BackendUnavailable, match="died between its chunks"):
        writer.session("s", user="u").append([user(f"secret {i}") for i in range(BATCH)])
    assert eraser.session("s").info() is None
    assert len(_of(raw, dynamodb_url, namespace, "s", "u")) == 1 + 99 + 1
    report = eraser.forget_user("u")
    assert report.complete and report.already_gone == ("s",)
    assert _of(raw, dynamodb_url, namespace, "s", "u") == []
