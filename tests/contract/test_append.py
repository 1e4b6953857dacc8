"""Promises 1, 2, 3, 4: atomic batches, total order, idempotency, optimistic concurrency."""

from __future__ import annotations

import pytest

from chatledger import (
    Ack,
    ConflictError,
    InvalidMessage,
    Store,
    assistant,
    tool,
    user,
)


def test_a_new_session_starts_at_version_zero(store: Store) -> None:
    session = store.session("fresh")
    history = session.read()
    assert (history.version, history.first_seq, history.messages) == (0, 1, [])
    assert session.info() is None


def test_a_batch_gets_contiguous_seqs_in_order(store: Store) -> None:
    session = store.session("s")
    first = session.append([user("a"), assistant("b")])
    second = session.append([user("c")])
    assert first == Ack(first_seq=1, last_seq=2, version=2, deduplicated=False,
                        ledger=first.ledger)
    assert second == Ack(first_seq=3, last_seq=3, version=3, deduplicated=False,
                         ledger=first.ledger)
    assert first.ledger  # a ledger id, the same for every append to this ledger
    history = session.read()
    assert [(m.seq, m.text) for m in history] == [(1, "a"), (2, "b"), (3, "c")]
    assert history.version == 3


def test_a_batch_with_one_invalid_message_stores_none(store: Store) -> None:
    session = store.session("s")
    session.append([user("before")])
    batch = [user("one"), assistant("two", metadata={"bad": {1, 2}}), user("three")]
    with pytest.raises(InvalidMessage) as caught:
        session.append(batch)
    assert caught.value.field == "messages[1].metadata.bad"
    assert "set is not JSON" in str(caught.value)
    history = session.read()
    assert [m.text for m in history] == ["before"]
    assert history.version == 1


def test_reappending_the_same_ids_returns_the_original_ack(store: Store) -> None:
    session = store.session("s")
    session.append([user("first")])
    batch = [user("q"), assistant("a")]
    original = session.append(batch)
    again = session.append(batch)
    assert again == Ack(original.first_seq, original.last_seq, original.version, deduplicated=True,
                        ledger=original.ledger)
    session.append([user("later")])
    assert session.append(batch) == again  # still the original Ack after more appends
    assert [m.text for m in session.read()] == ["first", "q", "a", "later"]


def test_a_retry_is_deduplicated_before_the_version_check(store: Store) -> None:
    session = store.session("s")
    batch = [user("q")]
    ack = session.append(batch, expect_version=0)
    assert session.append(batch, expect_version=0) == Ack(1, 1, 1, deduplicated=True,
                                                          ledger=ack.ledger)
    assert ack.version == 1


def test_ids_survive_trimming_for_deduplication(store: Store) -> None:
    session = store.session("s")
    batch = [user("old")]
    session.append(batch)
    session.append([user("new")])
    session.trim(keep_last=1)
    assert session.append(batch).deduplicated
    assert session.read().version == 2


def test_a_batch_mixing_stored_and_new_ids_is_refused_whole(store: Store) -> None:
    session = store.session("s")
    stored = user("stored")
    session.append([stored])
    with pytest.raises(InvalidMessage, match="retry a batch whole") as caught:
        session.append([user("new"), stored])
    assert caught.value.field == "messages[1].id"
    assert session.read().version == 1


def test_stored_ids_in_another_order_are_refused(store: Store) -> None:
    session = store.session("s")
    a, b = user("a"), user("b")
    session.append([a, b])
    with pytest.raises(InvalidMessage, match="not as the whole batch"):
        session.append([b, a])
    with pytest.raises(InvalidMessage, match="not as the whole batch"):
        session.append([a])  # part of a stored batch is no retry of it
    assert session.read().version == 2


def test_a_repeated_id_inside_one_batch_is_refused(store: Store) -> None:
    message = user("twice")
    with pytest.raises(InvalidMessage) as caught:
        store.session("s").append([message, message])
    assert caught.value.field == "messages[1].id"
    assert store.session("s").info() is None


def test_expect_version_mismatch_raises_conflict_with_current_version(store: Store) -> None:
    session = store.session("s")
    session.append([user("a")], expect_version=0)
    session.append([user("b")], expect_version=1)
    with pytest.raises(ConflictError) as caught:
        session.append([user("stale")], expect_version=1)
    assert (caught.value.expected, caught.value.current) == (1, 2)
    with pytest.raises(ConflictError) as caught:
        store.session("other").append([user("x")], expect_version=3)
    assert (caught.value.expected, caught.value.current) == (3, 0)
    assert [m.text for m in session.read()] == ["a", "b"]


def test_tool_calls_and_results_are_appended_together(store: Store) -> None:
    session = store.session("s")
    call = {"id": "call-1", "name": "lookup_order", "args": {"order": 123}}
    session.append([
        user("where is 123?"),
        assistant("", tool_calls=[call]),  # type: ignore[list-item]
        tool('{"status": "shipped"}', tool_call_id="call-1"),
        assistant("It shipped."),
    ])
    history = session.read()
    assert history.messages[1].tool_calls == [call]
    assert history.messages[2].tool_call_id == "call-1"


@pytest.mark.parametrize("bad", [-1, True, 1.5, 2**63, 2**64])
def test_expect_version_must_be_a_count(store: Store, bad: object) -> None:
    """Past 2**63 - 1 no backend can hold the version (SQLite raised its OverflowError)."""
    session = store.session("s")
    session.append([user("x")])
    with pytest.raises((TypeError, ValueError), match="expect_version"):
        session.append([user("y")], expect_version=bad)  # type: ignore[arg-type]
    assert [m.text for m in session.read()] == ["x"]
