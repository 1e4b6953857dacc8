"""The checkpoint ledger's own entries are stored without the field-by-field walk
(``_validation.encode_own``), yet refused as any append would be where their
text comes from outside: what the walk checked, the encoder or the entry does."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from chatledger import InvalidMessage, Message, open_async_store, open_store
from chatledger._validation import encode_batch, encode_own
from chatledger.langgraph import LedgerSaver, thread_config
from chatledger.langgraph._entries import CheckpointEntry, KeepAlive, Lease, encode

LONE = "\ud83d"


def _put(saver: LedgerSaver, thread: str) -> Any:
    return saver.put(thread_config(thread), empty_checkpoint(), {"source": "input", "step": -1},
                     {})


def test_text_that_is_not_valid_unicode_is_refused_naming_the_field() -> None:
    bad = Message("system", "label", id="e", metadata={"kind": "x", "ch": f"a{LONE}"})
    with pytest.raises(InvalidMessage, match=r"messages\[1\]\.metadata\.ch.*lone surrogate"):
        encode_own([Message("system", "x", id="ok"), bad], 10_000)


def test_own_entries_are_encoded_as_the_walk_would_and_refused_past_the_size() -> None:
    messages = [Message("system", "x", id=f"m{i}", metadata={"kind": "x", "n": [i, 1.5]},
                        data=b"abc") for i in range(2)]
    assert encode_own(messages, 10_000) == encode_batch(messages, 10_000)
    with pytest.raises(InvalidMessage, match=r"messages\[1\]: is .* over max_message_bytes=100"):
        encode_own([Message("system", "x", id="a"), Message("system", "y" * 100, id="b")], 100)
    with pytest.raises(InvalidMessage, match="the batch is empty"):
        encode_own([], 10_000)


@pytest.mark.parametrize("entry", [
    CheckpointEntry("c", None, ("msgpack", b""), ("msgpack", b""), [], {}, swept=float("nan")),
    KeepAlive(float("inf")),
    Lease("run", None, float("-inf")),
])
def test_a_time_that_is_no_finite_number_is_refused(entry: Any) -> None:
    with pytest.raises(InvalidMessage, match="not a finite number"):
        encode(entry, "e")


def test_a_store_that_redacts_stores_the_entries_through_its_hook() -> None:
    seen: list[str] = []

    def redact(message: Message) -> Message:
        seen.append(message.id)
        return message

    with open_store("memory://", redact=redact) as store:
        saver = LedgerSaver(store)
        config = _put(saver, "t")
        saver.put_writes(config, [("a", 1)], "task")
        assert saver.get_tuple(config).pending_writes == [("task", "a", 1)]
        assert len(seen) >= 2  # the checkpoint's and the write's entries went through it



def _redact_none(message: Message) -> Message:
    return message


@pytest.mark.parametrize("redact", [None, _redact_none])
def test_an_own_entry_over_the_size_is_refused_nothing_stored(redact: Any) -> None:
    huge = Message("system", "y" * 2_000_000, id="big")
    with open_store("memory://", redact=redact) as store:
        session = store.session("s")
        with pytest.raises(InvalidMessage, match="over max_message_bytes"):
            session._append_own([huge])
        assert session.read().version == 0

    async def refused() -> int:
        async with await open_async_store("memory://", redact=redact) as store:
            session = store.session("s")
            with pytest.raises(InvalidMessage, match="over max_message_bytes"):
                await session._append_own([huge])
            return (await session.read()).version

    assert asyncio.run(refused()) == 0
