"""ChatLedgerHistory keeps chatledger's promises behind LangChain's interface."""

from __future__ import annotations

import asyncio
import builtins
import importlib
import sys
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from chatledger import InvalidMessage, MemoryLostError, Store, open_async_store, open_store, user
from chatledger.langchain import ChatLedgerHistory, close_shared_stores, to_ledger
from chatledger.langchain import _watermark as watermark_module
from chatledger.testing._redis_server import RedisServer

T = TypeVar("T")


def turn(n: int) -> list[BaseMessage]:
    return [HumanMessage(f"question {n}", id=f"q{n}"), AIMessage(f"answer {n}", id=f"a{n}")]


def test_add_messages_is_one_atomic_append(store: Store) -> None:
    ack_before = store.session("s").info()
    ChatLedgerHistory(store, "s").add_messages(turn(1) + turn(2))
    info = store.session("s").info()
    assert ack_before is None and info is not None and info.version == 4
    # The four are one batch: appending any part of it again is no retry.
    with pytest.raises(InvalidMessage, match=r"not as the whole batch 1\.\.4"):
        store.session("s").append([to_ledger(turn(1)[0])])


def test_adding_the_same_messages_twice_stores_them_once(store: Store) -> None:
    history = ChatLedgerHistory(store, "s")
    history.add_messages(turn(1))
    history.add_messages(turn(1))
    assert history.messages == turn(1)
    assert store.session("s").read().version == 2


def test_a_retried_batch_with_messages_without_ids_is_stored_once(store: Store) -> None:
    """The usual turn: the user's message has no id, the model's reply has one."""
    history = ChatLedgerHistory(store, "s")
    batch = [HumanMessage("where is order 123?"), AIMessage("shipped", id="run-1")]
    history.add_messages(batch)
    history.add_messages([HumanMessage("where is order 123?"), AIMessage("shipped", id="run-1")])
    assert history.messages == batch
    # Something else beside the same reply is no retry: refused, not dropped.
    with pytest.raises(InvalidMessage, match="already stored"):
        history.add_messages([HumanMessage("and order 456?"), AIMessage("shipped", id="run-1")])
    assert history.messages == batch


def test_a_batch_is_read_once_even_from_a_generator(store: Store) -> None:
    ChatLedgerHistory(store, "s").add_messages(message for message in turn(1))  # type: ignore[arg-type]
    assert ChatLedgerHistory(store, "s").messages == turn(1)


def test_a_message_without_an_id_that_cannot_be_stored_is_named(store: Store) -> None:
    with pytest.raises(InvalidMessage) as caught:
        ChatLedgerHistory(store, "s").add_messages(
            [HumanMessage("x", additional_kwargs={"tags": {"a"}}), AIMessage("y", id="run-1")])
    assert caught.value.field == "messages[0].additional_kwargs.tags"
    assert store.session("s").info() is None


def test_two_identical_turns_without_ids_stay_two(store: Store) -> None:
    history = ChatLedgerHistory(store, "s")
    history.add_messages([HumanMessage("hi"), AIMessage("hello")])
    history.add_messages([HumanMessage("hi"), AIMessage("hello")])
    assert history.messages == [HumanMessage("hi"), AIMessage("hello")] * 2


def test_adding_nothing_stores_nothing(store: Store) -> None:
    ChatLedgerHistory(store, "s").add_messages([])
    assert store.session("s").info() is None


def test_add_message_and_helpers_go_through_add_messages(store: Store) -> None:
    history = ChatLedgerHistory(store, "s")
    history.add_user_message("hi")
    history.add_ai_message("hello")
    history.add_message(HumanMessage("bye", id="b"))
    assert history.messages == [HumanMessage("hi"), AIMessage("hello"), HumanMessage("bye", id="b")]
    assert str(history) == "Human: hi\nAI: hello\nHuman: bye"


def test_a_window_returns_the_last_messages(store: Store) -> None:
    ChatLedgerHistory(store, "s").add_messages(turn(1) + turn(2) + turn(3))
    assert ChatLedgerHistory(store, "s", last=3).messages == turn(2)[1:] + turn(3)


@pytest.mark.parametrize("last", [0, -1, 1.5, True, "3"])
def test_a_window_must_be_a_positive_int(store: Store, last: Any) -> None:
    with pytest.raises(ValueError, match="last must be a positive int"):
        ChatLedgerHistory(store, "s", last=last)


def test_messages_cannot_be_assigned(store: Store) -> None:
    history = ChatLedgerHistory(store, "s")
    with pytest.raises(AttributeError, match="append-only"):
        history.messages = []


def test_a_deletion_behind_the_historys_back_is_memory_lost(store: Store) -> None:
    history = ChatLedgerHistory(store, "s")
    history.add_messages(turn(1))
    assert len(history.messages) == 2
    store.session("s").delete()  # eviction, expiry, a stray DEL
    with pytest.raises(MemoryLostError) as caught:
        _ = history.messages
    assert (caught.value.expected, caught.value.found) == (2, 0)
    # A new history object (LangChain makes one per turn) knows it too.
    with pytest.raises(MemoryLostError):
        _ = ChatLedgerHistory(store, "s").messages
    # Writing onto the emptied session is refused: its ledger is gone, nothing is stored.
    with pytest.raises(MemoryLostError) as caught:
        history.add_messages([HumanMessage("hello?")])
    assert caught.value.ledger is not None and caught.value.found_ledger is None
    assert store.session("s").info() is None


def test_a_session_regrown_past_what_was_seen_is_memory_lost(store: Store) -> None:
    history = ChatLedgerHistory(store, "s")
    history.add_messages(turn(1))
    store.session("s").delete()  # lost, then another pod writes more than we had seen
    store.session("s").append([user(f"x{i}") for i in range(5)])
    with pytest.raises(MemoryLostError) as caught:
        _ = history.messages
    assert caught.value.found == 5 and caught.value.found_ledger is not None
    with pytest.raises(MemoryLostError):
        history.add_messages([HumanMessage("hello?")])
    assert store.session("s").read().version == 5


def test_loss_detection_can_be_turned_off(store: Store) -> None:
    ChatLedgerHistory(store, "s").add_messages(turn(1))
    store.session("s").delete()
    history = ChatLedgerHistory(store, "s", detect_loss=False)
    assert history.messages == []
    history.add_messages([HumanMessage("fresh start")])
    assert history.messages == [HumanMessage("fresh start")]


def test_clear_deletes_on_purpose_and_forgets(store: Store) -> None:
    history = ChatLedgerHistory(store, "s")
    history.add_messages(turn(1) + turn(2))
    history.clear()
    assert store.session("s").info() is None
    assert history.messages == []
    history.add_messages(turn(3))  # version 2, below the 4 seen before the clear: fine
    assert ChatLedgerHistory(store, "s").messages == turn(3)


def test_a_retry_acknowledged_as_an_older_batch_is_no_loss(store: Store) -> None:
    history = ChatLedgerHistory(store, "s")
    history.add_messages(turn(1))
    history.add_messages(turn(2))
    history.add_messages(turn(1))  # deduplicated: its Ack says version 2, 4 was seen
    assert history.messages == turn(1) + turn(2)


def test_histories_of_other_sessions_and_stores_do_not_share_what_they_saw(
    store: Store, url: str
) -> None:
    ChatLedgerHistory(store, "a").add_messages(turn(1))
    store.session("a").delete()
    assert ChatLedgerHistory(store, "b").messages == []
    with open_store(url) as other:  # another store object: its own watermarks
        assert ChatLedgerHistory(other, "a").messages == []


def test_the_watermarks_of_a_store_are_bounded(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(watermark_module, "MAX_SESSIONS_PER_STORE", 2)
    for session in ("a", "b", "a", "c"):  # "a" used again: "b" is the least recent
        ChatLedgerHistory(store, session).add_messages([HumanMessage(session)])
    for session in ("a", "b", "c"):
        store.session(session).delete()
    for session in ("a", "c"):
        with pytest.raises(MemoryLostError):
            _ = ChatLedgerHistory(store, session).messages
    assert ChatLedgerHistory(store, "b").messages == []  # forgotten: unchecked


def test_a_redis_restarted_empty_is_memory_lost(private_redis: RedisServer) -> None:
    history = ChatLedgerHistory.from_url(private_redis.url, "s")
    history.add_messages(turn(1))
    private_redis.restart(empty=True)
    with pytest.raises(MemoryLostError):
        _ = ChatLedgerHistory.from_url(private_redis.url, "s").messages


def test_from_url_shares_one_store_per_url_and_options(url: str) -> None:
    first = ChatLedgerHistory.from_url(url, "a")
    assert ChatLedgerHistory.from_url(url, "b").store is first.store
    assert ChatLedgerHistory.from_url(url, "a", timeout=1.5).store is not first.store
    first.add_messages(turn(1))
    assert ChatLedgerHistory.from_url(url, "a", last=1).messages == turn(1)[1:]
    close_shared_stores()
    assert ChatLedgerHistory.from_url(url, "a").store is not first.store


# Async: native on an async store, LangChain's thread pool on a sync one.


class NoThreadPool(ThreadPoolExecutor):
    """A default executor that refuses work: proves a coroutine used no thread."""

    def submit(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("ran in a thread pool")


def run_without_threads(make: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        asyncio.get_running_loop().set_default_executor(NoThreadPool())
        return await make()

    return asyncio.run(main())


def test_async_methods_work_on_an_async_store(url: str) -> None:
    """Natively: LangChain's fallback would call the sync methods, which refuse here."""

    async def conversation() -> list[BaseMessage]:
        async with await open_async_store(url) as astore:
            history = ChatLedgerHistory(astore, "s")
            await history.aadd_messages(turn(1))
            await history.aadd_messages(turn(1))  # idempotent here too
            await history.aadd_messages([])
            await history.aadd_messages(turn(2))
            assert await ChatLedgerHistory(astore, "s", last=2).aget_messages() == turn(2)
            await astore.session("s").delete()
            with pytest.raises(MemoryLostError):
                await history.aget_messages()
            await history.aclear()
            await history.aadd_messages(turn(3))
            return await history.aget_messages()

    assert asyncio.run(conversation()) == turn(3)


def test_async_methods_use_no_thread_on_async_redis(redis_url: str) -> None:
    async def conversation() -> list[BaseMessage]:
        astore = await open_async_store(redis_url, namespace="no-threads")
        try:
            history = ChatLedgerHistory(astore, "s")
            await history.aclear()
            await history.aadd_messages(turn(1))
            return await history.aget_messages()
        finally:
            await astore.close()

    assert run_without_threads(conversation) == turn(1)


def test_async_methods_use_langchains_thread_pool_on_a_sync_store(store: Store) -> None:
    history = ChatLedgerHistory(store, "s")

    async def conversation() -> list[BaseMessage]:
        await history.aadd_messages(turn(1))
        await history.aclear()
        await history.aadd_messages(turn(2))
        return await history.aget_messages()

    assert asyncio.run(conversation()) == turn(2)
    with pytest.raises(AssertionError, match="ran in a thread pool"):
        run_without_threads(history.aget_messages)


def test_sync_methods_on_an_async_store_say_what_to_use(url: str) -> None:
    async def attempt(call: Callable[[ChatLedgerHistory], object]) -> None:
        async with await open_async_store(url) as astore:
            call(ChatLedgerHistory(astore, "s"))

    for call in (lambda h: h.messages, lambda h: h.add_messages(turn(1)), lambda h: h.clear()):
        with pytest.raises(TypeError, match=r"async store: use aget_messages\(\)"):
            asyncio.run(attempt(call))


@pytest.fixture
def without_langchain_core(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    real_import = builtins.__import__

    def refuse(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "langchain_core":
            raise ImportError("No module named 'langchain_core'")
        return real_import(name, *args, **kwargs)

    saved = {name: module for name, module in sys.modules.items()
             if name.startswith("chatledger.langchain")}
    for name in saved:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(builtins, "__import__", refuse)
    yield
    monkeypatch.undo()
    sys.modules.update(saved)


@pytest.mark.usefixtures("without_langchain_core")
def test_a_missing_langchain_core_names_the_extra() -> None:
    with pytest.raises(ImportError, match=r'pip install -e "\.\[langchain\]" in a chatledger '
                       "checkout") as caught:
        importlib.import_module("chatledger.langchain")
    assert caught.value.name == "langchain_core"  # what `chatledger migrate` names
