"""LedgerStore and AsyncLedgerStore: LangGraph's BaseStore on every backend."""

from __future__ import annotations

import asyncio
import threading
import time
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import InvalidNamespaceError, PutOp

from chatledger import (
    BackendUnavailable,
    CorruptEntryError,
    InvalidMessage,
    Message,
    RetryPolicy,
    open_async_store,
    open_store,
)
from chatledger.langgraph import AsyncLedgerStore, LedgerStore
from chatledger.langgraph._item_layout import (
    item_session_id,
    namespace_prefix_id,
    split_item_session_id,
)
from chatledger.testing import FaultProxy, RedisServer
from tests.blocking import Blocking, _the_loop
from tests.conftest import FakeClock, retrying
from tests.langgraph.conftest import backend_url

EVERY_BACKEND = ["memory", "sqlite", "redis", "postgres", "dynamodb"]
# Labels that joined text would confuse: separators, wildcards, escapes, Unicode.
TRICKY = [("a", "b"), ("a/b",), ("a:b",), ("a", "b:"), ("a*",), ("a", "*"), ("%2F",),
          ("a=b",), ("a", "=b"), ("ä", "日本"), ("a\n",), ("a",), ("ab",)]


@pytest.fixture(params=EVERY_BACKEND)
def any_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend_url(request.param, request, tmp_path)


@pytest.fixture(params=["sync", "async"])
def make_store(request: pytest.FixtureRequest, clock: FakeClock) -> Iterator[Any]:
    """Opens LedgerStore, or AsyncLedgerStore seen through the sync names, on memory://."""
    opened: list[Any] = []

    def make(**options: Any) -> Any:
        if request.param == "sync":
            opened.append(LedgerStore(open_store("memory://", clock=clock), owns_store=True,
                                      **options))
        else:
            opened.append(BlockingStore(_the_loop().run(_async_store(clock, **options))))
        return opened[-1]

    yield make
    for store in opened:
        store.close()


async def _async_store(clock: FakeClock, **options: Any) -> AsyncLedgerStore:
    """Made on the loop that runs it, which its sync methods are sent to."""
    return AsyncLedgerStore(await open_async_store("memory://", clock=clock),
                            owns_store=True, **options)


class BlockingStore(Blocking):
    """The async store's coroutines awaited; its sync methods are its own (bridged)."""

    def close(self) -> None:
        self.aclose()


@pytest.fixture
def store(make_store: Any) -> Any:
    return make_store()


def _keys(items: list[Any]) -> list[str]:
    return [item.key for item in items]


# -- on every backend ------------------------------------------------------------------


def test_items_round_trip_and_namespaces_stay_tuples_on_every_backend(any_url: str) -> None:
    with LedgerStore.from_url(any_url, retry=RetryPolicy.none()) as store:
        for i, namespace in enumerate(TRICKY):
            store.put(namespace, f"k{i}", {"i": i, "label": list(namespace)})
        for i, namespace in enumerate(TRICKY):
            item = store.get(namespace, f"k{i}")
            assert item is not None and item.namespace == namespace
            assert item.value == {"i": i, "label": list(namespace)}
        assert sorted(store.list_namespaces(limit=100)) == sorted(TRICKY)
        # ("a",) is no prefix of ("ab",), ("a*",) or ("a/b",): labels, not text.
        assert sorted(_keys(store.search(("a",), limit=100))) == ["k0", "k11", "k3", "k5",
                                                                 "k8"]
        assert _keys(store.search(("a", "*"))) == ["k5"]  # "*" is data in a search
        store.delete(("a",), "k11")
        assert store.get(("a",), "k11") is None
        assert store.get(("ab",), "k12") is not None


def test_the_async_store_keeps_items_on_every_backend(any_url: str) -> None:
    async def scenario() -> list[Any]:
        async with AsyncLedgerStore.from_url(any_url) as store:
            await store.aput(("docs", "u1"), "a", {"n": 1})
            await store.aput(("docs", "u2"), "b", {"n": 2})
            found = await store.asearch(("docs",), filter={"n": {"$gte": 2}})
            return [_keys(found), await store.alist_namespaces(prefix=("docs",)),
                    (await store.aget(("docs", "u1"), "a")).value]  # type: ignore[union-attr]

    assert asyncio.run(scenario()) == [["b"], [("docs", "u1"), ("docs", "u2")], {"n": 1}]


# -- search, filters, listing ---------------------------------------------------------------


def test_filters_apply_before_limit_and_offset(store: LedgerStore, clock: FakeClock) -> None:
    for i in range(12):
        store.put(("n",), f"k{i:02}", {"i": i, "even": i % 2 == 0})
        clock.advance(1)
    # Newest first: k10, k08, k06, k04, ... ; the odd ones never take a place.
    assert _keys(store.search(("n",), filter={"even": True}, limit=3, offset=1)) == [
        "k08", "k06", "k04"]
    assert _keys(store.search(("n",), filter={"i": {"$gt": 3, "$lte": 6}})) == [
        "k06", "k05", "k04"]
    assert _keys(store.search(("n",), filter={"i": {"$lt": 1}})) == ["k00"]
    assert _keys(store.search(("n",), filter={"i": {"$ne": 5}, "even": False}, limit=2)) == [
        "k11", "k09"]
    assert _keys(store.search(("n",), filter={"i": {"$eq": 7}})) == ["k07"]
    assert _keys(store.search(("n",), filter={"i": {"$gte": 11}})) == ["k11"]


def test_filters_read_nested_and_dotted_fields_and_never_mix_types(store: LedgerStore) -> None:
    store.put(("f",), "a", {"user": {"access-level": "x"}, "n": 1, "s": "b", "flag": True,
                            "tags": ["p", "q"]})
    store.put(("f",), "b", {"user": {"access-level": "y"}, "n": "1", "s": "a"})
    assert _keys(store.search(("f",), filter={"user.access-level": "x"})) == ["a"]
    assert _keys(store.search(("f",), filter={"user": {"access-level": "y"}})) == ["b"]
    assert _keys(store.search(("f",), filter={"n": 1})) == ["a"]  # 1 is not "1"
    assert _keys(store.search(("f",), filter={"flag": 1})) == []  # true is not 1
    assert _keys(store.search(("f",), filter={"s": {"$gt": "a"}})) == ["a"]
    assert _keys(store.search(("f",), filter={"n": {"$gt": 0}})) == ["a"]  # "1" is text
    assert _keys(store.search(("f",), filter={"tags": ["p", "q"]})) == ["a"]
    assert _keys(store.search(("f",), filter={"user.none.deeper": 1})) == []
    with pytest.raises(ValueError, match=r"\$like"):
        store.search(("f",), filter={"n": {"$like": 1}})


def test_list_namespaces_matches_prefix_suffix_wildcards_and_depth(store: LedgerStore) -> None:
    for namespace in [("a", "b", "c"), ("a", "b", "d"), ("a", "x", "c"), ("z",)]:
        store.put(namespace, "k", {})
    assert store.list_namespaces(prefix=("a", "*")) == [("a", "b", "c"), ("a", "b", "d"),
                                                        ("a", "x", "c")]
    assert store.list_namespaces(suffix=("*", "c")) == [("a", "b", "c"), ("a", "x", "c")]
    assert store.list_namespaces(prefix=("a",), suffix=("d",)) == [("a", "b", "d")]
    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "x"), ("z",)]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "x", "c")]
    assert store.list_namespaces(prefix=("a", "b", "c", "d")) == []
    with pytest.raises(ValueError, match="match type"):
        store.batch([_list_op("middle")])


def _list_op(match_type: str) -> Any:
    from langgraph.store.base import ListNamespacesOp, MatchCondition

    return ListNamespacesOp(match_conditions=(MatchCondition(match_type, ("a",)),))  # type: ignore[arg-type]


def test_a_batch_runs_its_ops_in_order(store: LedgerStore) -> None:
    from langgraph.store.base import GetOp

    results = store.batch([PutOp(("b",), "k", {"v": 1}), GetOp(("b",), "k"),
                           PutOp(("b",), "k", None), GetOp(("b",), "k")])
    assert results[0] is None and results[1].value == {"v": 1}  # type: ignore[union-attr]
    assert results[2] is None and results[3] is None
    with pytest.raises(ValueError, match="unknown store operation"):
        store.batch([object()])  # type: ignore[list-item]


def test_a_batch_with_an_invalid_namespace_runs_nothing(store: LedgerStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("ok",), "k", {"v": 1}), PutOp(("bad.label",), "k", {"v": 1})])
    assert store.get(("ok",), "k") is None


# -- expiry ---------------------------------------------------------------------------------


def test_an_expired_item_is_never_returned_before_any_sweep(store: LedgerStore,
                                                            clock: FakeClock) -> None:
    store.put(("t",), "short", {"v": 1}, ttl=1)
    store.put(("t",), "forever", {"v": 2})
    clock.advance(59)
    assert store.get(("t",), "short", refresh_ttl=False) is not None
    clock.advance(1)
    assert store.get(("t",), "short") is None
    assert _keys(store.search(("t",))) == ["forever"]
    assert store.list_namespaces() == [("t",)]
    store.delete(("t",), "forever")
    assert store.list_namespaces() == []  # a namespace of expired items only is not listed


def test_the_default_ttl_applies_and_a_put_can_override_it(make_store: Any,
                                                           clock: FakeClock) -> None:
    store = make_store(ttl={"default_ttl": 2, "refresh_on_read": False})
    store.put(("t",), "default", {})
    store.put(("t",), "kept", {}, ttl=None)
    clock.advance(120)
    assert store.get(("t",), "default") is None
    assert store.get(("t",), "kept") is not None


def test_a_read_refreshes_the_expiry_unless_told_not_to(store: LedgerStore,
                                                        clock: FakeClock) -> None:
    for key in ("read", "untouched", "searched"):  # "searched" is the newest
        store.put(("t",), key, {}, ttl=1)
        clock.advance(1)
    clock.advance(50)
    assert store.get(("t",), "read") is not None
    assert _keys(store.search(("t",), limit=1)) == ["searched"]
    assert store.get(("t",), "untouched", refresh_ttl=False) is not None
    clock.advance(20)  # over 60 s after the puts, 20 s after the reads
    assert store.get(("t",), "read", refresh_ttl=False) is not None
    assert store.get(("t",), "searched", refresh_ttl=False) is not None
    assert store.get(("t",), "untouched") is None


def test_a_refresh_never_undoes_a_put_that_landed_after_the_read(store: LedgerStore,
                                                                 clock: FakeClock) -> None:
    store.put(("t",), "k", {"v": "old"}, ttl=1)
    read = store._read_item(("t",), "k")
    store.put(("t",), "k", {"v": "new"}, ttl=1)
    assert read is not None
    assert store._refreshed(read) == read  # the put moved the version: no refresh stored
    assert store.get(("t",), "k").value == {"v": "new"}  # type: ignore[union-attr]


def test_the_sweep_cuts_expired_items_and_keeps_a_put_after_them(store: LedgerStore,
                                                                 clock: FakeClock) -> None:
    store.put(("t",), "gone", {}, ttl=1)
    store.put(("t",), "back", {}, ttl=1)
    store.put(("t",), "live", {})
    clock.advance(61)
    store.put(("t",), "back", {"again": True})
    assert store.sweep_ttl() == 1
    assert store.sweep_ttl() == 0
    assert store.store.session(item_session_id(("t",), "gone")).info().count == 0  # type: ignore[union-attr]
    assert store.get(("t",), "back").value == {"again": True}  # type: ignore[union-attr]
    assert sorted(_keys(store.search(("t",)))) == ["back", "live"]


def test_the_sweepers_run_and_stop(clock: FakeClock) -> None:
    ttl = {"default_ttl": 1, "sweep_interval_minutes": 0.0001}
    with LedgerStore(open_store("memory://", clock=clock), owns_store=True,
                     ttl=ttl) as store:  # type: ignore[arg-type]
        store.put(("t",), "k", {})
        clock.advance(61)
        done = store.start_ttl_sweeper()
        assert _swept(store)
        assert store.stop_ttl_sweeper(timeout=10)
        assert done.result(timeout=10) is None
        assert store.stop_ttl_sweeper()  # none running


def _swept(store: LedgerStore) -> bool:
    """Whether the sweeper (its interval 6 ms, on its own thread) cut the expired item
    within 10 s: a bound for a loaded machine, polled, never a fixed sleep."""
    session = store.store.session(item_session_id(("t",), "k"))
    deadline = time.monotonic() + 10
    while session.info().count != 0:  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_no_sweeper_without_an_interval() -> None:
    with LedgerStore(open_store("memory://"), owns_store=True) as store:
        assert store.start_ttl_sweeper().done()

    async def scenario() -> bool:
        async with AsyncLedgerStore(await _async_memory(), owns_store=True) as astore:
            return await astore.start_ttl_sweeper() is None and await astore.stop_ttl_sweeper()

    assert asyncio.run(scenario())


async def _async_memory(**options: Any) -> Any:
    from chatledger import open_async_store

    return await open_async_store("memory://", **options)


def test_the_async_sweeper_task_sweeps(clock: FakeClock) -> None:
    async def scenario() -> tuple[int, bool]:
        ttl: Any = {"default_ttl": 1, "sweep_interval_minutes": 0.0001}
        async with AsyncLedgerStore(await _async_memory(clock=clock), owns_store=True,
                                    ttl=ttl) as store:
            await store.aput(("t",), "k", {})
            clock.advance(61)
            task = await store.start_ttl_sweeper()
            assert task is not None and await store.start_ttl_sweeper() is task
            session = store.store.session(item_session_id(("t",), "k"))
            for _ in range(1000):  # bounded: the task runs between these awaits
                info = await session.info()
                if info is not None and info.count == 0:
                    break
                await asyncio.sleep(0.001)
            stopped = await store.stop_ttl_sweeper(timeout=10)
            return (await session.info()).count, stopped  # type: ignore[union-attr]

    assert asyncio.run(scenario()) == (0, True)


# -- loud errors, retries, odd input -----------------------------------------------------------


def test_a_server_down_raises_never_answers_empty(private_redis: RedisServer) -> None:
    with LedgerStore.from_url(private_redis.url, retry=RetryPolicy.none(),
                              timeout=1.0) as store:
        store.put(("u",), "k", {"v": 1})
        private_redis.stop()
        for call in (lambda: store.get(("u",), "k"), lambda: store.search(("u",)),
                     lambda: store.list_namespaces(), lambda: store.put(("u",), "k", {}),
                     store.sweep_ttl):
            with pytest.raises(BackendUnavailable):
                call()


def test_a_put_whose_reply_was_lost_is_stored_once_and_in_order(redis_server: RedisServer,
                                                                 namespace: str) -> None:
    with FaultProxy(redis_server.host, redis_server.port) as proxy, LedgerStore.from_url(
            f"redis://{proxy.url_netloc}/0?namespace={namespace}", retry=retrying()) as store:
        store.put(("r",), "k", {"v": "first"})
        proxy.lose_next_reply()
        store.put(("r",), "k", {"v": "second"})  # applied, its reply lost, retried
        store.put(("r",), "k", {"v": "third"})
        assert proxy.faults_injected == 1
        info = store.store.session(item_session_id(("r",), "k")).info()
        assert info is not None and info.version == 3  # the retry stored nothing twice
        assert store.get(("r",), "k").value == {"v": "third"}  # type: ignore[union-attr]


def test_a_value_that_is_not_json_is_refused_and_nothing_stored(store: LedgerStore) -> None:
    with pytest.raises(InvalidMessage, match="JSON"):
        store.put(("v",), "k", {"when": object()})
    assert store.get(("v",), "k") is None


@pytest.mark.parametrize("ttl", [float("nan"), float("inf")])
def test_a_ttl_that_is_no_finite_number_is_refused_and_nothing_stored(make_store: Any,
                                                                     ttl: float) -> None:
    store = make_store()  # JSON would keep it as null: an item that never expires
    with pytest.raises(ValueError, match=r"^ttl must be a positive number of minutes"):
        store.put(("v",), "k", {"v": 1}, ttl=ttl)
    assert store.get(("v",), "k") is None


def test_a_ttl_whose_expiry_is_past_any_time_is_refused(make_store: Any) -> None:
    store = make_store()  # finite minutes, but the expiry overflows to infinity
    with pytest.raises(ValueError, match=r"^ttl .* at most 5\.256e\+07 .* got 1e\+308"):
        store.put(("v",), "k", {"v": 1}, ttl=1e308)
    assert store.get(("v",), "k") is None
    store.put(("v",), "k", {"v": 1}, ttl=100 * 525_600)  # a century: the longest
    assert store.get(("v",), "k") is not None


def test_a_clock_that_gives_no_finite_time_is_refused(make_store: Any, clock: FakeClock) -> None:
    store = make_store()
    clock.now = float("nan")
    with pytest.raises(InvalidMessage, match="clock gave a time that is not a finite"):
        store.put(("v",), "k", {"v": 1})
    clock.now = 1_800_000_000.0
    assert store.get(("v",), "k") is None


def test_a_namespace_and_key_too_long_for_an_id_are_refused(store: LedgerStore) -> None:
    with pytest.raises(ValueError, match="over 1024"):
        store.put(("n",), "k" * 1100, {})
    with pytest.raises(TypeError, match="key must be a str"):
        store.batch([PutOp(("n",), 5, {})])  # type: ignore[arg-type]


def test_an_entry_that_is_no_item_raises(store: LedgerStore) -> None:
    store.store.session(item_session_id(("c",), "k")).append(
        [Message(role="user", content="hello")])
    with pytest.raises(CorruptEntryError, match="no LedgerStore item"):
        store.get(("c",), "k")
    store.store.session(item_session_id(("c",), "j")).append(
        [Message(role="system", content="", metadata={"item": 1, "json": 2}, data=b"{}")])
    with pytest.raises(CorruptEntryError, match="damaged"):
        store.search(("c",))


def test_an_item_keeps_few_versions(store: LedgerStore) -> None:
    for i in range(17):
        store.put(("v",), "k", {"i": i})
    info = store.store.session(item_session_id(("v",), "k")).info()
    assert info is not None and (info.version, info.count) == (17, 2)
    assert store.get(("v",), "k").value == {"i": 16}  # type: ignore[union-attr]


# -- the sync and async bridges -----------------------------------------------------------------


def test_the_async_store_serves_sync_calls_from_other_threads() -> None:
    async def scenario() -> Any:
        async with AsyncLedgerStore(await _async_memory(), owns_store=True) as store:
            await store.aput(("s",), "k", {"v": 1})
            with pytest.raises(asyncio.InvalidStateError):
                store.get(("s",), "k")
            return await asyncio.to_thread(store.get, ("s",), "k")

    assert asyncio.run(scenario()).value == {"v": 1}


def test_the_async_store_sync_calls_need_its_loop_running() -> None:
    store = asyncio.run(_closed_async_store())
    with pytest.raises(RuntimeError, match="not running"):
        store.get(("s",), "k")


async def _closed_async_store() -> AsyncLedgerStore:
    store = AsyncLedgerStore(await _async_memory(), owns_store=True)
    await store.aclose()
    return store


def test_the_sync_store_serves_async_calls() -> None:
    async def scenario(store: LedgerStore) -> Any:
        await store.aput(("s",), "k", {"v": 2})
        return await store.aget(("s",), "k")

    with LedgerStore(open_store("memory://"), owns_store=True) as store:
        store.setup()
        assert asyncio.run(scenario(store)).value == {"v": 2}


def test_a_store_given_is_not_closed_with_the_item_store() -> None:
    with open_store("memory://") as chat:
        with LedgerStore(chat) as store:
            store.put(("g",), "k", {})
        assert LedgerStore(chat).get(("g",), "k") is not None


def test_opening_a_store_on_a_server_that_is_down_fails() -> None:
    from chatledger.testing import free_port

    with pytest.raises(BackendUnavailable), LedgerStore.from_url(
            f"redis://127.0.0.1:{free_port()}/0", retry=RetryPolicy.none(), timeout=1.0):
        pass


# -- semantic search ------------------------------------------------------------------------------


def _embed(texts: list[str]) -> list[list[float]]:
    """A deterministic fake embedding: how often each of "abcd" occurs."""
    return [[float(text.count(c)) for c in "abcd"] for text in texts]


def test_semantic_search_ranks_by_exact_cosine_within_the_prefix(make_store: Any,
                                                                 clock: FakeClock) -> None:
    store = make_store(index={"dims": 4, "embed": _embed, "fields": ["text"]})
    store.put(("docs", "a"), "1", {"text": "aaa"})
    store.put(("docs", "a"), "2", {"text": "abab"})
    store.put(("docs", "b"), "3", {"text": "dddd"})
    store.put(("other",), "4", {"text": "aaaa"})
    store.put(("docs", "a"), "5", {"text": "aaa"}, index=False)
    store.put(("docs", "b"), "6", {"tags": ["ddd", "aaa"]}, index=["tags[*]"])
    found = store.search(("docs",), query="a", limit=10)
    assert [(item.key, item.score) for item in found] == [
        ("1", 1.0), ("6", 1.0), ("2", pytest.approx(2 ** -0.5)), ("3", 0.0), ("5", None)]
    assert [(i.key, i.score) for i in store.search(("docs",), query="d", limit=2, offset=1)] \
        == [("6", 1.0), ("1", 0.0)]
    entry = store.store.session(item_session_id(("docs", "a"), "1")).read().messages[-1]
    assert entry.data.endswith(bytes(array("f", [3.0, 0.0, 0.0, 0.0])))  # float32, 4 dims
    assert len(entry.data) == entry.metadata["json"] + 16


def test_a_store_without_an_index_ignores_the_query(store: Any, clock: FakeClock) -> None:
    store.put(("q",), "old", {"text": "aaa"})
    clock.advance(1)
    store.put(("q",), "new", {"text": "bbb"})
    assert [(i.key, i.score) for i in store.search(("q",), query="aaa")] == [
        ("new", None), ("old", None)]


def test_an_embedding_of_the_wrong_size_is_refused(make_store: Any) -> None:
    store = make_store(index={"dims": 3, "embed": _embed})
    with pytest.raises(ValueError, match=r"an embedding has 4 dimensions, index\['dims'\] is 3"):
        store.put(("q",), "k", {"text": "a"})
    assert store.get(("q",), "k") is None
    store.put(("q",), "nothing to embed", {"text": "a"}, index=["missing"])
    assert store.get(("q",), "nothing to embed") is not None


# -- the id layout -----------------------------------------------------------------------------


@pytest.mark.parametrize("namespace", [*TRICKY, ("a.b",), ("nul\x00",), ("",), ("%", "=", "/"),
                                       ("😀", "\U0010ffff")])
def test_every_namespace_and_key_round_trips_through_its_session_id(
        namespace: tuple[str, ...]) -> None:
    # "." and NUL are refused by LangGraph's BaseStore; the layout keeps them apart anyway.
    for key in ("k", "a/b=c", "%00", "\x00", "=", ""):
        session = item_session_id(namespace, key)
        assert "\x00" not in session
        assert split_item_session_id(session) == (namespace, key)
        assert session.startswith(namespace_prefix_id(namespace))


def test_distinct_namespaces_never_share_an_id_or_a_prefix() -> None:
    spaces = [*TRICKY, ("a.b",), ("a", "b", ""), ("a", "b/")]
    ids = {item_session_id(ns, "k") for ns in spaces}
    assert len(ids) == len(spaces)
    for ns in spaces:
        under = {other for other in spaces
                 if item_session_id(other, "k").startswith(namespace_prefix_id(ns))}
        assert under == {other for other in spaces if other[:len(ns)] == ns}


def test_other_sessions_are_no_items() -> None:
    assert split_item_session_id("lg:3:abc:") is None
    assert split_item_session_id("lgs/no-key/") is None
    assert split_item_session_id("lgs/label=key") is None


def test_a_failed_sweep_is_logged_and_the_sweeper_goes_on(
        make_store: Any, caplog: pytest.LogCaptureFixture) -> None:
    store = make_store(ttl={"sweep_interval_minutes": 0.0001})
    target = store._target if isinstance(store, BlockingStore) else store
    calls: list[int] = []

    def failing() -> Any:
        calls.append(1)
        if len(calls) >= 2:
            done.set()
        raise BackendUnavailable("down")

    async def afailing() -> Any:
        return failing()

    done = threading.Event()
    target.sweep_ttl = afailing if isinstance(store, BlockingStore) else failing
    store.start_ttl_sweeper()
    assert done.wait(10)
    assert store.stop_ttl_sweeper(timeout=10)
    assert "the TTL sweep failed" in caplog.text


def test_an_async_store_made_outside_a_loop_serves_no_sync_calls() -> None:
    store = AsyncLedgerStore(_the_loop().run(open_async_store("memory://")), owns_store=True)
    assert store.loop is None
    with pytest.raises(RuntimeError, match="not running"):
        store.get(("s",), "k")
    _the_loop().run(store.aclose())


def test_values_are_sealed_with_the_keyring(tmp_path: Path) -> None:
    from chatledger import Keyring

    keyring = Keyring({"k1": Keyring.new_key()}, current="k1")
    url = f"sqlite:///{tmp_path / 'sealed.db'}"
    with LedgerStore.from_url(url, encryption=keyring) as store:
        store.put(("secret",), "k", {"card": "4111-1111-1111-1111"})
        assert store.get(("secret",), "k").value == {"card": "4111-1111-1111-1111"}  # type: ignore[union-attr]
    raw = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    assert b"4111-1111" not in raw and b"card" not in raw


def test_forget_user_erases_the_items_of_their_namespaces(any_url: str) -> None:
    with LedgerStore.from_url(any_url, user_label=1) as store:
        store.put(("users", "u1", "prefs"), "food", {"likes": "pizza"})
        store.put(("users", "u1"), "name", {"v": "Ada"})
        store.put(("users", "u2", "prefs"), "food", {"likes": "tea"})
        store.put(("global",), "rule", {"v": 1})  # names no user: tagged with none
        report = store.store.forget_user("u1")
        assert sorted(report.deleted) == sorted([item_session_id(("users", "u1", "prefs"), "food"),
                                                 item_session_id(("users", "u1"), "name")])
        assert store.search(("users", "u1")) == []
        assert _keys(store.search(("users",))) == ["food"]
        assert store.get(("global",), "rule") is not None


def test_closing_the_store_stops_its_sweeper(clock: FakeClock) -> None:
    ttl = {"default_ttl": 1, "sweep_interval_minutes": 0.0001}
    with LedgerStore(open_store("memory://", clock=clock), owns_store=True,
                     ttl=ttl) as store:  # type: ignore[arg-type]
        done = store.start_ttl_sweeper()
    assert done.result(timeout=10) is None  # stopped on leaving, before the store closed
    assert store._sweeper_thread is None

    async def scenario() -> bool:
        async with AsyncLedgerStore(await _async_memory(), owns_store=True,
                                    ttl=ttl) as astore:  # type: ignore[arg-type]
            task = await astore.start_ttl_sweeper()
        assert task is not None
        return task.done()

    assert asyncio.run(scenario())
