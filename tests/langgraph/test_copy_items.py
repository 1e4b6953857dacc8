"""copy_items and acopy_items: every namespace and item of LangGraph's stores
(InMemoryStore, SqliteStore, PostgresStore on a private PostgreSQL, and
AsyncSqliteStore) into a LedgerStore, with times, TTLs and index fields."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from chatledger import InvalidMessage, open_store
from chatledger.langgraph import (
    AsyncLedgerStore,
    ItemCopyReport,
    LedgerStore,
    acopy_items,
    copy_items,
)
from chatledger.langgraph._item_copying import SourceFacts, epoch_of, index_of, is_expired
from chatledger.langgraph._item_sources import _facts, read_source

SOURCES = ["memory", "sqlite", "postgres"]
# Labels that joined text would confuse; a tree three deep; more items than a page.
SPACES = [("users", "u1", "prefs"), ("users", "u1"), ("users", "u2", "prefs"), ("a:b",),
          ("日本", "é"), ("notes",)]


@contextmanager
def source_store(kind: str, request: Any, tmp_path: Path) -> Iterator[BaseStore]:
    """A LangGraph store of ``kind`` on a database of this test's own."""
    if kind == "memory":
        yield InMemoryStore()
    elif kind == "sqlite":
        from langgraph.store.sqlite import SqliteStore

        with SqliteStore.from_conn_string(str(tmp_path / "langgraph.db")) as store:
            store.setup()
            yield store
    else:
        import psycopg
        from langgraph.store.postgres import PostgresStore

        server = request.getfixturevalue("postgres_server")
        database = f"lgs_{secrets.token_hex(6)}"
        with psycopg.connect(server.url, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {database}")
        with PostgresStore.from_conn_string(server.url.rsplit("/", 1)[0] + f"/{database}") \
                as store:
            store.setup()
            yield store


def _fill(source: BaseStore) -> dict[tuple[tuple[str, ...], str], dict[str, Any]]:
    written = {}
    for n, space in enumerate(SPACES):
        for i in range(4 if space != ("notes",) else 9):
            value = {"n": n, "i": i, "text": f"item {i} of {'/'.join(space)}", "deep": [1.5]}
            source.put(space, f"k{i}", value)
            written[(space, f"k{i}")] = value
    return written


@pytest.mark.parametrize("kind", SOURCES)
def test_every_item_comes_over_once_with_its_times(kind: str, request: pytest.FixtureRequest,
                                                   tmp_path: Path) -> None:
    progress: list[tuple[int, int]] = []
    with source_store(kind, request, tmp_path) as source, \
            LedgerStore.from_url(f"sqlite:///{tmp_path}/ours.db") as target:
        written = _fill(source)
        report = copy_items(source, target, page=5,
                            on_progress=lambda done, total: progress.append((done, total)))
        assert (report.namespaces, report.copied, report.present) == (6, len(written), 0)
        assert progress[0] == (0, 6) and progress[-1] == (6, 6) and report.ok
        for (space, key), value in written.items():
            theirs, ours = source.get(space, key), target.get(space, key, refresh_ttl=False)
            assert ours is not None and theirs is not None and ours.value == value
            assert epoch_of(ours.updated_at) == pytest.approx(epoch_of(theirs.updated_at))
            assert epoch_of(ours.created_at) == pytest.approx(epoch_of(theirs.created_at))
        assert sorted(target.list_namespaces(limit=100)) == sorted(SPACES)
        again = copy_items(source, target)
        assert (again.copied, again.present) == (0, len(written))


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_ttls_keep_their_instant_and_minutes_and_expired_items_stay_behind(
        kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    with source_store(kind, request, tmp_path) as source, \
            LedgerStore.from_url("memory://ttl") as target:
        source.put(("t",), "hour", {"v": 1}, ttl=60.0)
        source.put(("t",), "gone", {"v": 2}, ttl=60.0)
        source.put(("t",), "forever", {"v": 3})
        _expire(source, kind, "gone")  # as if its hour had passed, unswept
        facts = read_source(source)
        assert facts is not None and facts.fields is None
        report = copy_items(source, target)
        assert (report.copied, report.expired) == (2, 1)
        assert "read from" in report.ttls and type(source).__name__ in report.ttls
        assert target.get(("t",), "gone") is None
        hour = target._read_item(("t",), "hour")
        assert hour is not None and hour.item.ttl == 60.0
        assert hour.item.expires == pytest.approx(facts.expiries[(("t",), "hour")][0])
        forever = target._read_item(("t",), "forever")
        assert forever is not None and forever.item.expires is None


def _expire(source: Any, kind: str, key: str) -> None:
    past = "datetime('now', '-1 minute')" if kind == "sqlite" else "NOW() - INTERVAL '1 minute'"
    with source._cursor() as cursor:
        cursor.execute(f"UPDATE store SET expires_at = {past} WHERE key = '{key}'")


def test_an_in_memory_source_has_no_ttls_and_says_so() -> None:
    with LedgerStore.from_url("memory://none") as target:
        report = copy_items(InMemoryStore(), target, dry_run=True)
        assert report.ttls == "InMemoryStore has none" and report.summary().splitlines() == [
            "0 namespace(s) found",
            "would copy 0 item(s); 0 already in chatledger; 0 expired on the source, left out",
            "TTLs: InMemoryStore has none"]


def test_a_dry_run_counts_and_stores_nothing() -> None:
    source = InMemoryStore()
    source.put(("a",), "k", {"v": 1})
    with LedgerStore.from_url("memory://dry") as target:
        report = copy_items(source, target, dry_run=True)
        assert (report.copied, report.dry_run) == (1, True)
        assert target.get(("a",), "k") is None


def test_the_targets_index_embeds_what_is_copied() -> None:
    def embed(texts: list[str]) -> list[list[float]]:
        return [[float(t.count(c)) for c in "abcd"] for t in texts]

    source = InMemoryStore()
    source.put(("q",), "as", {"text": "aaaa"})
    source.put(("q",), "ds", {"text": "dddd"})
    with LedgerStore(open_store("memory://"), owns_store=True,
                     index={"dims": 4, "embed": embed, "fields": ["text"]}) as target:
        copy_items(source, target)
        assert [i.key for i in target.search(("q",), query="dd")] == ["ds", "as"]


def test_a_value_the_target_refuses_is_reported_and_the_rest_go_on() -> None:
    source = InMemoryStore()
    source.put(("a",), "big", {"tags": {"a", "b"}})  # a set: InMemoryStore keeps it, JSON not
    source.put(("a",), "small", {"text": "x"})
    with LedgerStore.from_url("memory://refusing") as target:
        report = copy_items(source, target)
        assert report.copied == 1 and not report.ok
        [why] = report.refused
        assert why.startswith("namespace ('a',) key 'big': ")
        assert "value.tags: set is not JSON (use a sorted list)" in why
        assert "1 item(s) not copied:\n  namespace ('a',) key 'big': " in report.summary()
        with pytest.raises(InvalidMessage):
            target.put(("a",), "big", {"tags": {"a", "b"}})


def test_a_refused_item_names_its_namespace_apart_from_a_deeper_one() -> None:
    source = InMemoryStore()
    source.put(("a/b",), "c", {"tags": {"x"}})  # a set: refused
    source.put(("a", "b"), "c", {"tags": {"y"}})
    with LedgerStore.from_url("memory://apart") as target:
        report = copy_items(source, target)
    assert sorted(why.split(": ")[0] for why in report.refused) == [
        "namespace ('a', 'b') key 'c'", "namespace ('a/b',) key 'c'"]


def test_an_item_put_on_the_target_since_is_never_overwritten_by_the_source() -> None:
    source = InMemoryStore()
    source.put(("users", "u42"), "prefs", {"likes": "pizza"})
    source.put(("users", "u42"), "name", {"n": "Ada"})
    with LedgerStore.from_url("memory://switched") as target:
        assert copy_items(source, target).copied == 2
        target.put(("users", "u42"), "prefs", {"likes": "sushi"})  # the app, after the switch
        for dry_run in (True, False):
            again = copy_items(source, target, dry_run=dry_run)
            assert (again.copied, again.present) == (0, 1)
            [why] = again.refused
            assert why.startswith("namespace ('users', 'u42') key 'prefs': the target's item "
                                  "was put at or after")
        assert target.get(("users", "u42"), "prefs").value == {"likes": "sushi"}
        source.put(("users", "u42"), "name", {"n": "Ada L."})  # a newer source still comes
        assert copy_items(source, target).copied == 1
        assert target.get(("users", "u42"), "name").value == {"n": "Ada L."}


def test_a_page_must_hold_something() -> None:
    with LedgerStore.from_url("memory://page") as target, \
            pytest.raises(ValueError, match="page must be at least 1"):
        copy_items(InMemoryStore(), target, page=0)


def test_items_of_a_user_are_tagged_with_the_user() -> None:
    source = InMemoryStore()
    source.put(("users", "u9", "prefs"), "k", {"v": 1})
    with LedgerStore(open_store("memory://"), owns_store=True, user_label=1) as target:
        copy_items(source, target)
        target.store.forget_user("u9")
        assert target.get(("users", "u9", "prefs"), "k") is None


def test_the_async_copy_reads_an_async_sqlite_store_and_its_ttls(tmp_path: Path) -> None:
    from langgraph.store.sqlite.aio import AsyncSqliteStore

    async def run() -> ItemCopyReport:
        async with AsyncSqliteStore.from_conn_string(str(tmp_path / "a.db")) as source, \
                AsyncLedgerStore.from_url("memory://async") as target:
            await source.setup()
            await source.aput(("n",), "k", {"v": 1}, ttl=30.0)
            await source.aput(("n", "m"), "k", {"v": 2})
            report = await acopy_items(source, target, page=1)
            item = await target._read_item(("n",), "k")
            assert item is not None and item.item.ttl == 30.0
            assert item.item.expires == pytest.approx(time.time() + 30 * 60, abs=5)
            assert (await target.aget(("n", "m"), "k")).value == {"v": 2}  # type: ignore[union-attr]
            return report

    report = asyncio.run(run())
    assert (report.namespaces, report.copied) == (2, 2) and "AsyncSqliteStore" in report.ttls


def test_source_facts_give_the_index_and_expiry_the_target_takes() -> None:
    facts = _facts("S", [("a.b", "k", "2026-01-01 00:00:00", 5.0), {
        "prefix": "c", "key": "j", "expires_at": None, "ttl_minutes": None}],
                   [("a.b", "k", "text"), ("a.b", "k", "title")])
    assert facts.expiries[(("a", "b"), "k")] == (1767225600.0, 5.0)
    assert index_of(facts, (("a", "b"), "k")) == ["text", "title"]
    assert index_of(facts, (("c",), "j")) is False  # indexed on nothing at the source
    assert index_of(SourceFacts("S", {}), (("c",), "j")) is None
    assert index_of(None, ((), "")) is None
    assert is_expired(facts, (("a", "b"), "k"), 1767225600.0)
    assert not is_expired(facts, (("c",), "j"), 0) and not is_expired(None, ((), ""), 0)


def test_a_store_that_shows_no_ttls_is_named() -> None:
    class Hidden(InMemoryStore):
        supports_ttl = True

    with LedgerStore.from_url("memory://hidden") as target:
        report = copy_items(Hidden(), target)
        assert report.ttls == ("Hidden does not show them through BaseStore: items copied "
                               "without a TTL")


def test_the_async_copy_reads_an_async_postgres_store_and_its_ttls(
        request: pytest.FixtureRequest) -> None:
    import psycopg
    from langgraph.store.postgres.aio import AsyncPostgresStore

    server = request.getfixturevalue("postgres_server")
    database = f"lgs_{secrets.token_hex(6)}"
    with psycopg.connect(server.url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")

    async def run() -> ItemCopyReport:
        url = server.url.rsplit("/", 1)[0] + f"/{database}"
        async with AsyncPostgresStore.from_conn_string(url) as source, \
                AsyncLedgerStore.from_url("memory://async-pg") as target:
            await source.setup()
            await source.aput(("n",), "k", {"v": 1}, ttl=30.0)
            report = await acopy_items(source, target)
            item = await target._read_item(("n",), "k")
            assert item is not None and item.item.ttl == 30.0 and item.item.expires
            return report

    report = asyncio.run(run())
    assert report.copied == 1 and "AsyncPostgresStore" in report.ttls


def test_the_async_copy_does_what_the_sync_one_does() -> None:
    from chatledger import open_async_store

    class Hidden(InMemoryStore):
        supports_ttl = True

    source = Hidden()
    source.put(("users", "u9", "prefs"), "big", {"tags": {"a", "b"}})  # not JSON: refused
    source.put(("users", "u9", "prefs"), "small", {"text": "x"})

    async def run() -> tuple[list[tuple[int, int]], list[ItemCopyReport]]:
        store = await open_async_store("memory://")
        progress: list[tuple[int, int]] = []
        async with AsyncLedgerStore(store, owns_store=True, user_label=1) as target:
            with pytest.raises(ValueError, match="page must be at least 1"):
                await acopy_items(source, target, page=0)
            reports = [await acopy_items(source, target, dry_run=True),
                       await acopy_items(source, target,
                                         on_progress=lambda d, t: progress.append((d, t))),
                       await acopy_items(source, target)]
            await target.store.forget_user("u9")
            assert await target.aget(("users", "u9", "prefs"), "small") is None
        return progress, reports

    progress, (dry, first, again) = asyncio.run(run())
    assert progress == [(0, 1), (1, 1)]
    assert (dry.copied, first.copied, again.present) == (2, 1, 1)
    assert len(first.refused) == 1 and first.refused[0].startswith(
        "namespace ('users', 'u9', 'prefs') key 'big': ")
    assert "does not show them through BaseStore" in first.ttls
