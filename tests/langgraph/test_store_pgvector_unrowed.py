"""Items holding embeddings but no ``item_vectors`` rows (brought in by an import,
stored before pgvector was enabled) are scored all the same: never silently missed."""

from __future__ import annotations

import asyncio
import io
import uuid
from typing import Any

import psycopg
import pytest

from chatledger import Keyring, open_async_store, open_store
from chatledger._async.vector_search import vector_searching as async_vector_searching
from chatledger._sync.vector_search import VectorSearching, vector_searching
from chatledger.langgraph import AsyncLedgerStore, LedgerStore
from chatledger.langgraph._item_entries import StoredItem
from chatledger.langgraph._item_layout import item_session_id
from chatledger.langgraph._item_queries import to_float32
from chatledger.langgraph._item_vectors import rows_of
from chatledger.transfer import export_sessions, import_sessions
from tests.conftest import FakeClock
from tests.langgraph.test_store_pgvector import _index, _rows, _same

TEXTS = ["aaa", "abab", "dddd", "cab", "bbbbbbbbc", "a", "dcba dcba", "ccd", "b"]


def _fill(store: LedgerStore, texts: list[str], tag: str) -> None:
    for i, text in enumerate(texts):
        store.put(("docs", tag), f"k{i}", {"text": text, "n": i})
    store.put(("docs", tag), "plain", {"text": "zz", "n": -1}, index=False)


@pytest.fixture
def stores(pgvector_url: str, clock: FakeClock) -> Any:
    namespace = f"vec-{uuid.uuid4().hex[:12]}"
    url = f"{pgvector_url}?namespace={namespace}"
    ours = LedgerStore(open_store(url, clock=clock), owns_store=True, index=_index())
    python = LedgerStore(open_store("memory://", clock=clock), owns_store=True, index=_index())
    yield ours, python, (pgvector_url, namespace)
    ours.close()
    python.close()


def _forget_rows(url: str, namespace: str, where: str = "") -> None:
    """Drop the namespace's rows (under ``where``): as if its items came before pgvector."""
    with psycopg.connect(url) as connection:
        connection.execute("DELETE FROM chatledger.item_vectors WHERE ns = %s AND sid LIKE %s",
                           (namespace, item_session_id(("docs", where), "")
                            .replace("/=", "/%") if where else "%"))


def _searches_agree(ours: LedgerStore, python: LedgerStore, forget: Any) -> None:
    """The same pages as the Python path, each search with the rows forgotten first."""
    for query in ["a", "dd", "cab", "zzz"]:
        for limit, offset in [(10, 0), (3, 0), (3, 2), (4, 9), (5, 20), (30, 0)]:
            want = python.search(("docs",), query=query, limit=limit, offset=offset)
            forget()
            got = ours.search(("docs",), query=query, limit=limit, offset=offset)
            assert _same(got, want), (query, limit, offset, got, want)
        for condition in [{"n": {"$gte": 3}}, {"n": {"$lt": 0}}]:
            want = python.search(("docs",), query=query, filter=condition, limit=4, offset=1)
            forget()
            got = ours.search(("docs",), query=query, filter=condition, limit=4, offset=1)
            assert _same(got, want), (query, condition, got, want)


def test_imported_items_are_scored(stores: Any) -> None:
    ours, python, (url, namespace) = stores
    _fill(python, TEXTS, "imported")
    _fill(ours, TEXTS[:4], "put")
    _fill(python, TEXTS[:4], "put")
    out = io.StringIO()
    export_sessions(python.store, out, prefix=item_session_id(("docs", "imported"), ""))
    import_sessions(ours.store, io.BytesIO(out.getvalue().encode()))
    assert len(ours.search(("docs", "imported"), limit=100)) == len(TEXTS) + 1
    assert {sid for sid, _ in _rows(url, namespace)} == {
        item_session_id(("docs", "put"), f"k{i}") for i in range(4)}  # the import wrote none
    _searches_agree(ours, python, lambda: _forget_rows(url, namespace, "imported"))


def test_items_stored_before_the_table_had_rows_are_scored(stores: Any) -> None:
    ours, python, (url, namespace) = stores
    for store in (ours, python):
        _fill(store, TEXTS, "old")
    _searches_agree(ours, python, lambda: _forget_rows(url, namespace))
    _forget_rows(url, namespace)
    [best] = ours.search(("docs",), query="dddd", limit=1)
    assert best.key == "k2" and best.score == pytest.approx(1.0, abs=1e-5)
    # the search kept the rows it found missing: the next one scores them in SQL
    assert {sid for sid, _ in _rows(url, namespace)} == {
        item_session_id(("docs", "old"), f"k{i}") for i in range(len(TEXTS))}
    _searches_agree(ours, python, lambda: None)


def test_rows_of_an_entry_trimmed_meanwhile_are_not_kept(stores: Any) -> None:
    ours, _, (url, namespace) = stores
    ours.put(("docs", "t"), "k", {"text": "aaa"})
    session = item_session_id(("docs", "t"), "k")
    [(_, seq)] = _rows(url, namespace, session)
    rows = rows_of(session, StoredItem(value={}, updated=0.0, created=0.0,
                                       vectors={"text": to_float32([1.0] * 5, 5)}))
    searching = vector_searching(ours.store)
    assert searching is not None
    searching.vector_backfill([(seq + 7, rows), (seq, rows)])
    assert _rows(url, namespace, session) == [(session, seq)]  # the one at seq: kept


def test_only_a_backend_with_the_search_and_no_keyring_offers_it(pgvector_url: str) -> None:
    keyring = Keyring({"k1": Keyring.new_key()}, current="k1")
    with open_store("memory://") as plain, open_store(pgvector_url) as ours, \
            open_store(pgvector_url, encryption=keyring) as sealed:
        assert vector_searching(plain) is None
        assert isinstance(vector_searching(ours), VectorSearching)
        assert vector_searching(sealed) is None


def test_the_async_store_scores_and_keeps_them_too(pgvector_url: str) -> None:
    namespace = f"vec-{uuid.uuid4().hex[:12]}"
    asyncio.run(_async_unrowed(pgvector_url, namespace))
    assert len(_rows(pgvector_url, namespace)) == 3  # two kept by the search, one put: no 99


async def _async_unrowed(url: str, namespace: str) -> None:
    async with AsyncLedgerStore(await open_async_store(f"{url}?namespace={namespace}"),
                                index=_index(), owns_store=True) as store:
        await store.aput(("docs", "a"), "near", {"text": "dddd"})
        await store.aput(("docs", "a"), "far", {"text": "b"})
        await store.aput(("docs", "a"), "plain", {"text": "dddd"}, index=False)
        _forget_rows(url, namespace)
        found = await store.asearch(("docs",), query="dddd", limit=2)
        assert [i.key for i in found] == ["near", "far"]
        await store.aput(("docs", "a"), "gone", {"text": "dddd"})
        searching = async_vector_searching(store.store)
        assert searching is not None
        session = item_session_id(("docs", "a"), "gone")
        await searching.vector_backfill([(99, rows_of(session, StoredItem(
            value={}, updated=0.0, created=0.0, vectors={"t": to_float32([1.0] * 5, 5)})))])
