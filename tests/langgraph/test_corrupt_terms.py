"""A damaged entry met through the saver or LedgerStore is named in their users'
terms (thread and checkpoint_ns; namespace and key), never by the session id
the ledger keeps it under (``lg:...``, ``lgs/...``)."""

from __future__ import annotations

import asyncio
import pickle
import uuid
from dataclasses import replace
from typing import Any

import pytest
from langgraph.checkpoint.base import CheckpointMetadata, empty_checkpoint
from langgraph.store.memory import InMemoryStore

from chatledger import CorruptEntryError, Message, system
from chatledger.langgraph import (
    AsyncLedgerSaver,
    AsyncLedgerStore,
    LedgerSaver,
    LedgerStore,
    copy_items,
)
from chatledger.langgraph._item_layout import item_session_id
from chatledger.langgraph._layout import session_id


def _memory() -> str:
    return f"memory://{uuid.uuid4().hex}"


def _config(ns: str = "") -> Any:
    return {"configurable": {"thread_id": "t:1", "checkpoint_ns": ns}}


def _damaged_thread(saver: LedgerSaver, ns: str) -> None:
    checkpoint = empty_checkpoint()
    md: CheckpointMetadata = {"source": "loop", "step": 0}  # type: ignore[typeddict-item]
    saver.put(_config(ns), checkpoint, md, {})
    saver.store.session(session_id("t:1", ns)).append(
        [system("bad", metadata={"langgraph": 1, "kind": "CheckpointEntry"})])


def _in_thread_terms(exc: CorruptEntryError, ns: str) -> None:
    assert "lg:" not in str(exc)
    assert str(exc).startswith(f"thread 't:1' checkpoint_ns {ns!r}: "), str(exc)
    assert exc.session == session_id("t:1", ns) and exc.seq == 2  # its attributes stay
    assert str(pickle.loads(pickle.dumps(exc))) == str(exc)


@pytest.mark.parametrize("ns", ["", "child:abc"])
def test_the_saver_names_the_thread_and_namespace_of_a_damaged_entry(ns: str) -> None:
    with LedgerSaver.from_url(_memory()) as saver:
        _damaged_thread(saver, ns)
        with pytest.raises(CorruptEntryError) as got:
            saver.get_tuple(_config(ns))
        _in_thread_terms(got.value, ns)
        with pytest.raises(CorruptEntryError) as listed:
            list(saver.list(_config(ns)))
        _in_thread_terms(listed.value, ns)
        with pytest.raises(CorruptEntryError) as pruned:
            saver.prune(["t:1"])
        _in_thread_terms(pruned.value, ns)


def test_the_async_saver_names_the_thread_too() -> None:
    async def main() -> None:
        async with AsyncLedgerSaver.from_url(_memory()) as saver:
            checkpoint = empty_checkpoint()
            md: CheckpointMetadata = {"source": "loop", "step": 0}  # type: ignore[typeddict-item]
            await saver.aput(_config(), checkpoint, md, {})
            await saver.store.session(session_id("t:1", "")).append(
                [system("bad", metadata={"langgraph": 1, "kind": "CheckpointEntry"})])
            with pytest.raises(CorruptEntryError) as got:
                await saver.aget_tuple(_config())
            _in_thread_terms(got.value, "")
            with pytest.raises(CorruptEntryError) as listed:
                [t async for t in saver.alist(_config())]
            _in_thread_terms(listed.value, "")
    asyncio.run(main())


def _in_item_terms(exc: CorruptEntryError) -> None:
    assert "lgs/" not in str(exc)
    assert str(exc).startswith("namespace ('users', 'a/b=c') key 'k=1': "), str(exc)
    assert "no LedgerStore item" in str(exc)


def test_ledger_store_names_the_namespace_and_key_of_a_damaged_item() -> None:
    with LedgerStore.from_url(_memory()) as store:
        store.store.session(item_session_id(("users", "a/b=c"), "k=1")).append(
            [Message(role="user", content="not an item")])
        for call in (lambda: store.get(("users", "a/b=c"), "k=1"),
                     lambda: store.search(("users",)),
                     lambda: store.list_namespaces()):
            with pytest.raises(CorruptEntryError) as got:
                call()
            _in_item_terms(got.value)


def test_the_async_store_names_them_too() -> None:
    async def main() -> None:
        async with AsyncLedgerStore.from_url(_memory()) as store:
            await store.store.session(item_session_id(("users", "a/b=c"), "k=1")).append(
                [Message(role="user", content="not an item")])
            with pytest.raises(CorruptEntryError) as got:
                await store.aget(("users", "a/b=c"), "k=1")
            _in_item_terms(got.value)
    asyncio.run(main())


def test_copy_items_names_a_damaged_target_item_by_namespace_and_key() -> None:
    source = InMemoryStore()
    source.put(("users", "a/b=c"), "k=1", {"v": 1})
    with LedgerStore.from_url(_memory()) as target:
        target.store.session(item_session_id(("users", "a/b=c"), "k=1")).append(
            [Message(role="user", content="not an item")])
        with pytest.raises(CorruptEntryError) as got:
            copy_items(source, target)
        _in_item_terms(got.value)


@pytest.mark.parametrize("damage", [{"early": ["x"]}, {}, {"chains": {"c": 5}}])  # {}: no carried
def test_copy_thread_names_the_thread_of_an_entry_it_cannot_copy(
        damage: dict[str, Any]) -> None:
    with LedgerSaver.from_url(_memory()) as saver:
        md: CheckpointMetadata = {"source": "input", "step": -1}  # type: ignore[typeddict-item]
        saver.put(_config(), empty_checkpoint(), md, {})
        session = saver.store.session(session_id("t:1", ""))
        stored = session.read().messages[-1]
        metadata = {key: value for key, value in stored.metadata.items() if key != "carried"}
        session.append([replace(stored, metadata={**metadata, **damage}, id="forged",
                                seq=None)])
        with pytest.raises(CorruptEntryError) as got:
            saver.copy_thread("t:1", "t2")
        assert str(got.value).startswith("thread 't:1' checkpoint_ns '': a stored entry "
                                         "(seq 2) cannot be decoded: a checkpoint ledger entry "
                                         "that cannot be copied"), str(got.value)


def test_the_words_for_a_thread_its_index_and_what_is_not_a_thread() -> None:
    from chatledger.langgraph._layout import index_session_id
    from chatledger.langgraph._terms import _thread_of, _thread_words

    index, checkpoints = index_session_id("t:1"), session_id("t:1", "sub")
    assert _thread_words(index) == "thread 't:1' (its index of checkpoint namespaces)"
    assert _thread_words(checkpoints) == "thread 't:1' checkpoint_ns 'sub'"
    assert _thread_of(index) == _thread_of(checkpoints) == "thread 't:1'"  # a user's: all of it
    for other in ("user-42", "lg:9:t", "lg:x:t"):
        assert _thread_words(other) is None and _thread_of(other) is None


def test_a_user_error_is_said_of_the_thread_or_left_as_it_was() -> None:
    from chatledger import SessionUserError
    from chatledger.langgraph._terms import thread_terms

    @thread_terms
    def write(session: str) -> None:
        raise SessionUserError(session, "bob", None)

    with pytest.raises(SessionUserError) as named:
        write(session_id("t", ""))
    assert str(named.value) == ("thread 't' was written first without a user, not 'bob': "
                                "its user is set by its first write and never changes; "
                                "nothing was stored")
    with pytest.raises(SessionUserError) as kept:
        write("user-42")  # not a thread's session: the store's own words
    assert str(kept.value).startswith("session 'user-42' was created without a user")
