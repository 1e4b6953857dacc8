"""dynamodb:// behind the store: what is in the table, large batches and their lease,
windowed reads' Limit, doctor, create-table and the URL's options."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from chatledger import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    RetryPolicy,
    open_async_store,
    open_store,
    user,
)
from chatledger._backends.dynamodb import races
from chatledger.testing._dynamodb_server import DynamoDBServer
from tests.dynamodb.conftest import OpenDynamo, Opener, interleave, items, native


def test_a_turn_is_one_transaction_of_meta_entries_and_ids(
        open_dynamo: OpenDynamo, raw: Any, dynamodb_url: str) -> None:
    store = open_dynamo()
    store.session("s").append([user("q"), user("a")])
    kinds = sorted(item["sk"]["S"][0] for item in items(raw, dynamodb_url))
    assert kinds == ["e", "e", "i", "i", "m"]
    calls = _spy(store, "transact_write_items", "get_item")
    store.session("s").append([user("q2"), user("a2")])
    assert calls == ["transact_write_items"]  # the meta item is remembered: one request


def test_a_batch_over_one_transaction_and_a_message_over_the_item_limit_are_exact(
        open_dynamo: OpenDynamo, raw: Any, dynamodb_url: str) -> None:
    store = open_dynamo()
    session = store.session("s")
    session.append([user("first")])
    batch = [user(f"m{i}") for i in range(150)]  # 301 items: four transactions and a commit
    ack = session.append(batch)
    assert (ack.first_seq, ack.last_seq) == (2, 151)
    big = user("x" * 1_000_000)  # three parts besides its entry
    assert session.append([big]).last_seq == 152
    history = open_dynamo().session("s").read()
    assert [m.text for m in history] == ["first", *(f"m{i}" for i in range(150)), big.text]
    assert session.append(batch).deduplicated  # a retry of the large batch: its Ack
    assert session.append([big]).deduplicated
    meta = next(i for i in items(raw, dynamodb_url) if i["sk"]["S"] == "m")
    assert "lease" not in meta and meta["ver"]["N"] == "152"
    assert session.trim(keep_last=0) == 152
    assert [i["sk"]["S"][0] for i in items(raw, dynamodb_url) if i["sk"]["S"][0] in "ep"] == []


def _large_path_of(store: Any) -> Any:
    """The module of the store's large appends (leases): dynamodb/_sync/large.py or its
    source, _async/."""
    package = type(native(store._backend)).__module__.rpartition(".")[0]
    return sys.modules[f"{package}.large"]


def test_readers_never_see_a_large_batch_before_its_commit_and_a_dead_one_is_cleaned(
        opener: Opener, raw: Any, dynamodb_url: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    store = opener()
    session = store.session("s")
    session.append([user("kept")])

    def die(*args: Any, **kwargs: Any) -> Any:
        raise BackendUnavailable("the writer died before its commit")

    monkeypatch.setattr(native(store._backend), "_commit_write", die)
    with pytest.raises(BackendUnavailable):
        session.append([user(f"m{i}") for i in range(60)])
    other = opener()
    assert [m.text for m in other.session("s").read()] == ["kept"]  # entries written, unseen
    with pytest.raises(BackendUnavailable, match=r"large append .* being written"):
        other.session("s").append([user("blocked")])  # the lease is live
    monkeypatch.setattr(_large_path_of(other).time, "time", lambda: 4_000_000_000.0)  # expired
    assert other.session("s").append([user("next")]).first_seq == 2
    assert [m.text for m in other.session("s").read()] == ["kept", "next"]
    left = [i for i in items(raw, dynamodb_url) if i.get("tok", {}).get("S", "")]
    assert left == []  # the dead attempt's entries and ids are gone


def test_a_new_session_whose_large_append_died_is_taken_over(
        opener: Opener, raw: Any, dynamodb_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = opener()
    monkeypatch.setattr(native(store._backend), "_commit_write", _raise)
    with pytest.raises(BackendUnavailable):
        store.session("s").append([user(f"m{i}") for i in range(60)])
    other = opener()
    assert other.session("s").info() is None and list(other.sessions()) == []
    monkeypatch.setattr(_large_path_of(other).time, "time", lambda: 4_000_000_000.0)
    assert other.session("s").append([user("fresh")]).version == 1
    assert [m.text for m in other.session("s").read()] == ["fresh"]
    left = [i for i in items(raw, dynamodb_url) if i.get("tok", {}).get("S", "")]
    assert left == []  # the dead attempt's entries and ids are gone


def test_a_retry_of_a_large_append_resumes_its_own_lease(
        opener: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    store = opener()
    session = store.session("s")
    session.append([user("kept")])
    backend = native(store._backend)
    commit = backend._commit_write
    monkeypatch.setattr(backend, "_commit_write", _raise)
    batch = [user(f"m{i}") for i in range(60)]
    with pytest.raises(BackendUnavailable):
        session.append(batch)
    monkeypatch.setattr(backend, "_commit_write", commit)
    ack = session.append(batch)  # the same ids: the same lease, no wait for it to expire
    assert (ack.first_seq, ack.last_seq, ack.deduplicated) == (2, 61, False)


def test_an_append_that_keeps_losing_the_race_gives_up_unavailable(
        opener: Opener, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rival's append lands before each of the writer's transactions: every try
    fails its meta condition, and after RACES of them the append is unavailable,
    having stored nothing; once the rival stops, the same batch goes in."""
    writer, rival = opener(), opener()
    writer.session("s").append([user("first")])
    monkeypatch.setattr(races, "RACES", 3)
    rival_session = native(rival).session("s")

    def rival_appends(operation: str, kwargs: dict[str, Any], done: list[Any]) -> bool:
        return operation == "transact_write_items" and len(done) < 3  # then it stops

    raced = interleave(writer, rival_appends, lambda: rival_session.append([user("rival")]),
                       before=True)
    batch = [user("mine")]
    with pytest.raises(BackendUnavailable, match="changed under 3 attempts in a row"):
        writer.session("s").append(batch)
    assert [ack.first_seq for ack in raced] == [2, 3, 4]  # one lost race each
    assert [m.text for m in rival.session("s").read()] == ["first"] + ["rival"] * 3
    ack = writer.session("s").append(batch)
    assert (ack.first_seq, ack.deduplicated) == (5, False)


def test_an_append_losing_race_after_race_stops_at_the_calls_deadline(
        opener: Opener) -> None:
    """Losing every race, an append ends at its call's deadline, long before RACES
    attempts (the sync twin's pauses are not cut off by the deadline as an async
    sleep is, so they must stop there themselves), and stores nothing."""
    writer, rival = opener(retry=RetryPolicy(attempts=1, deadline=0.5)), opener()
    # Written by the rival: the writer's 0.5 s is for the append under test alone (a
    # first append of its own, on a loaded machine, could spend it before any race).
    rival.session("s").append([user("first")])
    rival_session = native(rival).session("s")

    def rival_appends(operation: str, kwargs: dict[str, Any], done: list[Any]) -> bool:
        return operation == "transact_write_items"

    raced = interleave(writer, rival_appends, lambda: rival_session.append([user("rival")]),
                       before=True)
    with pytest.raises(BackendUnavailable, match="deadline") as caught:
        writer.session("s").append([user("mine")])
    assert "attempts in a row" not in str(caught.value)
    assert 1 <= len(raced) < races.RACES
    texts = [m.text for m in rival.session("s").read()]
    # The rival's last append may land as the async call is cancelled, before its Ack
    # is recorded.
    assert texts == ["first"] + ["rival"] * (len(texts) - 1)
    assert len(texts) - 1 - len(raced) in (0, 1)


def test_a_read_meets_no_entry_above_the_version(opener: Opener) -> None:
    """An expired session written again keeps its old ledger's entries past the new
    one's length (and a large append writes its entries before the meta item): a read
    asks for exactly the window's sort keys, so they cost it nothing and change nothing."""
    clock = [1_800_000_000.0]
    store = opener(ttl=60, clock=lambda: clock[0])
    store.session("s").append([user(f"old {i}") for i in range(10)])
    clock[0] += 120
    store.session("s").append([user("new 0"), user("new 1")])
    requests = _spy(store, "get_item", "query", "batch_get_item")
    session = store.session("s")
    assert [m.text for m in session.read(last=5)] == ["new 0", "new 1"]
    assert [m.text for m in session.read(after=1)] == ["new 1"]
    assert requests == ["get_item", "query"] * 2


def test_a_huge_last_asks_for_the_window_that_exists(open_dynamo: OpenDynamo) -> None:
    store = open_dynamo()
    store.session("s").append([user(f"m{i}") for i in range(5)])
    limits: list[int] = []
    io = store._backend.io
    call = io.call

    def spy(operation: str, **kwargs: Any) -> Any:
        if operation == "query":
            limits.append(kwargs.get("Limit", -1))
        return call(operation, **kwargs)

    io.call = spy
    assert [m.text for m in store.session("s").read(last=10**15)] == [f"m{i}" for i in range(5)]
    assert [m.text for m in store.session("s").read(last=2)] == ["m3", "m4"]
    assert limits == [5, 2]


def test_sessions_page_through_the_index_and_skip_expired_ones(open_dynamo: OpenDynamo) -> None:
    clock = [1_800_000_000.0]
    store = open_dynamo(ttl=60, clock=lambda: clock[0])
    for i in range(3):
        store.session(f"a{i}").append([user("x")])
    clock[0] += 30
    store.session("b").append([user("x")])
    assert list(store.sessions()) == ["a0", "a1", "a2", "b"]
    assert list(store.sessions(prefix="a")) == ["a0", "a1", "a2"]
    clock[0] += 40  # the a* sessions expired, b lives
    assert list(store.sessions()) == ["b"]
    assert store.purge() == 1


def test_doctor_reads_the_table_s_settings(open_dynamo: OpenDynamo) -> None:
    found = {check.name: check.status for check in open_dynamo()._backend.checks()}
    assert found == {"table": "ok", "key schema": "ok", "ttl": "ok", "billing": "ok",
                     "point-in-time recovery": "warn", "latency": "info"}


def test_doctor_on_a_missing_table_fails_one_check(dynamodb_server: DynamoDBServer) -> None:
    with open_store(dynamodb_server.url("missing"), retry=RetryPolicy.none()) as store:
        checks = store._backend.checks()
        with pytest.raises(BackendError, match="table does not exist"):
            store.session("s").read()
    assert [(c.name, c.status) for c in checks] == [("table", "fail")]


def test_create_table_is_idempotent(dynamodb_server: DynamoDBServer) -> None:
    url = dynamodb_server.url("made-here")
    with open_store(url + "&create=true") as store:
        assert store._backend.created
    with open_store(url + "&create=true") as store:
        assert not store._backend.created
        assert store.session("s").append([user("x")]).version == 1


@pytest.mark.parametrize(("url", "said"), [
    ("dynamodb://x", "name a table"),
    ("dynamodb://ok-table/path", "name a table"),
    ("dynamodb://ok-table?regoin=eu-west-1", "unknown option 'regoin'"),
    ("dynamodb://ok-table?create=maybe", "create"),
])
def test_bad_urls_are_refused_at_open(url: str, said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        open_store(url)


def test_the_async_store_sends_its_requests_from_the_event_loop(dynamodb_url: str) -> None:
    """aiobotocore on the loop: no request is handed to a worker thread. The one
    thing a thread does is aiobotocore's loading of the CA bundle, once per client
    (file I/O kept off the loop)."""
    import asyncio
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from chatledger._backends.dynamodb._async.backend import AsyncDynamoDBBackend

    sent: list[str] = []

    class Recording(ThreadPoolExecutor):
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
            sent.append(repr(args[0] if args else fn))
            return super().submit(fn, *args, **kwargs)

    async def run() -> tuple[list[str], set[int], int]:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(Recording(max_workers=1))
        async with await open_async_store(dynamodb_url, namespace="async") as store:
            backend = store._backend
            assert isinstance(backend, AsyncDynamoDBBackend)
            threads: set[int] = set()
            call = backend.io.call

            async def on_the_loop(operation: str, **kwargs: Any) -> Any:
                threads.add(threading.get_ident())
                return await call(operation, **kwargs)

            backend.io.call = on_the_loop  # type: ignore[method-assign]
            session = store.session("s")
            await session.append([user("one"), user("two")])
            await session.append([user(f"m{i}") for i in range(60)])  # the large path
            texts = [m.text for m in await session.read()]
            assert [s async for s in store.sessions()] == ["s"]
            assert await session.trim(keep_last=2) == 60
            assert await session.delete()
            return texts, threads, threading.get_ident()

    texts, threads, loop_thread = asyncio.run(run())
    assert texts == ["one", "two", *(f"m{i}" for i in range(60))]
    assert threads == {loop_thread}
    assert len(sent) == 1 and "_build_ssl_contexts" in sent[0], sent


def _spy(store: Any, *names: str) -> list[str]:
    """Record the requests named ``names`` that the store's backend sends."""
    calls: list[str] = []
    io = store._backend.io
    call = io.call

    def recorder(operation: str, **kwargs: Any) -> Any:
        if operation in names:
            calls.append(operation)
        return call(operation, **kwargs)

    io.call = recorder
    return calls


def _raise(*args: Any, **kwargs: Any) -> Any:
    raise BackendUnavailable("the writer died before its commit")
