"""LedgerStore's put on its short way: its own ``put``/``aput`` (LangGraph's checks,
then the op alone in a batch's turn) and the item's entry encoded without a Message
(``_codec.encode_system``), with the Message path kept for a redact hook and for a
value stored in parts."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.store.base import InvalidNamespaceError
from langgraph.store.memory import InMemoryStore

from chatledger import Message, open_async_store, open_store
from chatledger._codec import decode, encode, encode_system
from chatledger.langgraph import AsyncLedgerStore, LedgerStore


def test_an_item_entry_is_encoded_as_its_message_would_be() -> None:
    metadata: dict[str, Any] = {"item": 1, "at": 1.5, "created": 1.0, "exp": None, "ttl": None,
                                "json": 8, "vec": []}
    blob = encode_system("id-1", metadata, b'{"a": 1}')
    decoded = decode("s", 1, blob)
    message = Message(role="system", content="", id="id-1", metadata=metadata,
                      data=b'{"a": 1}', created_at=decoded.created_at)
    assert blob == encode(message)
    assert decoded.data == b'{"a": 1}' and decoded.metadata == metadata


def test_a_store_that_redacts_stores_items_through_its_hook() -> None:
    seen: list[str] = []

    def redact(message: Message) -> Message:
        seen.append(message.role)
        return message

    with LedgerStore(open_store("memory://", redact=redact), owns_store=True) as store:
        store.put(("docs",), "a", {"text": "hello"})
        item = store.get(("docs",), "a")
    assert item is not None and item.value == {"text": "hello"}
    assert seen == ["system"]  # the item's one entry went through the hook


def test_put_checks_what_langgraphs_put_checks() -> None:
    with LedgerStore(open_store("memory://"), owns_store=True) as store:
        for namespace in [(), ("langgraph", "x"), ("a.b",), ("a", ""), (7,)]:
            with pytest.raises(InvalidNamespaceError) as theirs:
                InMemoryStore().put(namespace, "k", {"v": 1})  # type: ignore[arg-type]
            with pytest.raises(InvalidNamespaceError) as ours:
                store.put(namespace, "k", {"v": 1})  # type: ignore[arg-type]
            assert str(ours.value) == str(theirs.value)  # in LangGraph's own words
        with pytest.raises(TypeError, match="must be a dict"):
            store.put(("docs",), "k", ["not", "a", "dict"])  # type: ignore[arg-type]
        store.put(("docs",), 7, {"v": 1})  # type: ignore[arg-type]  # str()'d, as LangGraph's
        item = store.get(("docs",), "7")
        assert item is not None and item.key == "7"
        assert [found.key for found in store.search(("docs",))] == ["7"]


def test_put_takes_the_default_ttl_unless_given_one() -> None:
    ttl = {"default_ttl": 5.0, "refresh_on_read": False}
    with LedgerStore(open_store("memory://"), ttl=ttl, owns_store=True) as store:  # type: ignore[arg-type]
        store.put(("docs",), "default", {"v": 1})
        store.put(("docs",), "none", {"v": 1}, ttl=None)
        store.put(("docs",), "own", {"v": 1}, ttl=1.0)
        found = {key: store._read_item(("docs",), key) for key in ("default", "none", "own")}
    ttls = {key: f.item.ttl if f is not None else "missing" for key, f in found.items()}
    assert ttls == {"default": 5.0, "none": None, "own": 1.0}


def test_the_async_put_takes_the_same_short_way() -> None:
    async def run() -> tuple[Any, Any, float | None]:
        store = AsyncLedgerStore(await open_async_store("memory://"), owns_store=True,
                                 ttl={"default_ttl": 3.0})
        async with store:
            with pytest.raises(InvalidNamespaceError):
                await store.aput(("langgraph",), "k", {"v": 1})
            await store.aput(("docs",), "k", {"v": 2})
            item = await store.aget(("docs",), "k")
            found = await store._read_item(("docs",), "k")
            await store.aput(("docs",), "k", None)  # type: ignore[arg-type]  # a delete
            gone = await store.aget(("docs",), "k")
        return item, gone, None if found is None else found.item.ttl

    item, gone, ttl = asyncio.run(run())
    assert item is not None and item.value == {"v": 2}
    assert gone is None and ttl == 3.0


def test_the_async_put_tags_the_user_and_keeps_a_given_ttl() -> None:
    async def run() -> tuple[float | None, int]:
        store = AsyncLedgerStore(await open_async_store("memory://"), owns_store=True,
                                 user_label=1)
        async with store:
            await store.aput(("users", "ann"), "k", {"v": 1}, ttl=2.0)
            found = await store._read_item(("users", "ann"), "k")
            report = await store.store.forget_user("ann")
        return None if found is None else found.item.ttl, len(report.deleted)

    ttl, forgotten = asyncio.run(run())
    assert ttl == 2.0 and forgotten == 1  # the item was tagged with its user


class _Metered(LedgerStore):
    """A subclass that wraps ``batch`` to see every op, as users trace or meter a store."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[Any] = []

    def batch(self, ops: Any) -> Any:
        ops = list(ops)
        self.seen += ops
        return super().batch(ops)


class _AsyncMetered(AsyncLedgerStore):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[Any] = []

    async def abatch(self, ops: Any) -> Any:
        ops = list(ops)
        self.seen += ops
        return await super().abatch(ops)


def test_a_subclass_that_wraps_batch_sees_every_put() -> None:
    with _Metered(open_store("memory://"), owns_store=True) as store:
        store.put(("docs",), "a", {"text": "hello"}, ttl=None)
        assert [(type(op).__name__, op.key) for op in store.seen] == [("PutOp", "a")]
        item = store.get(("docs",), "a")
        assert item is not None and item.value == {"text": "hello"}
        with pytest.raises(InvalidNamespaceError):  # BaseStore's checks still run first
            store.put(("",), "b", {"text": "x"})
        assert len(store.seen) == 2  # the get; the refused put reached no batch


def test_an_async_subclass_that_wraps_abatch_sees_every_put() -> None:
    async def scenario() -> None:
        async with _AsyncMetered(await open_async_store("memory://"), owns_store=True) as store:
            await store.aput(("docs",), "a", {"text": "hello"})
            assert [(type(op).__name__, op.key) for op in store.seen] == [("PutOp", "a")]
            item = await store.aget(("docs",), "a")
            assert item is not None and item.value == {"text": "hello"}

    asyncio.run(scenario())
