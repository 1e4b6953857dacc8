"""LedgerStore's semantic search on PostgreSQL with pgvector (a real server with
the extension: pgserver's binaries), checked against the Python path."""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from langgraph.store.base import PutOp

from chatledger import Keyring, Message, SessionUserError, open_async_store, open_store
from chatledger.langgraph import AsyncLedgerStore, LedgerStore
from chatledger.langgraph._item_layout import item_session_id
from chatledger.testing import _pgvector_server
from chatledger.testing._postgres_server import PostgresServer
from tests.conftest import FakeClock

DISTANCES = ["cosine", "l2", "inner_product"]
# Labels a LIKE pattern would read as wildcards, a dotted path, escapes, Unicode.
TRICKY = [("a_",), ("ab",), ("a%",), ("a%25",), ("a",), ("ä",), ("日本",),
          ("a_", "x"), ("a", "_")]


def _embed(texts: list[str]) -> list[list[float]]:
    """A deterministic fake embedding, dense, so that the texts below score no ties."""
    return [[sum(math.sin((ord(ch) % 32) * (i + 1) * 0.7 + d) for i, ch in enumerate(text))
             + 0.1 * (d + 1) for d in range(5)] for text in texts]


def _index(distance: str = "cosine") -> Any:
    return {"dims": 5, "embed": _embed, "fields": ["text"], "distance_type": distance}


@pytest.fixture
def namespace() -> str:
    return f"vec-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def open_items(pgvector_url: str, namespace: str, clock: FakeClock) -> Iterator[Any]:
    """Opens LedgerStores on the pgvector server (and on memory://, the Python path)."""
    opened: list[LedgerStore] = []

    def make(distance: str = "cosine", url: str | None = None, **options: Any) -> LedgerStore:
        where = url or f"{pgvector_url}?namespace={namespace}"
        opened.append(LedgerStore(open_store(where, clock=clock, **options), owns_store=True,
                                  index=_index(distance)))
        return opened[-1]

    yield make
    for store in opened:
        store.close()


def _rows(url: str, namespace: str, session: str | None = None) -> list[tuple[str, int]]:
    """The item_vectors rows of a namespace (of one session): (sid, seq)."""
    with psycopg.connect(url) as connection:
        return connection.execute(
            "SELECT sid, seq FROM chatledger.item_vectors WHERE ns = %s"
            " AND (%s::text IS NULL OR sid = %s) ORDER BY sid, seq",
            (namespace, session, session)).fetchall()


def _fill(store: LedgerStore) -> None:
    texts = ["aaa", "abab", "dddd", "cab", "bbbbbbbbc", "a", "dcba dcba", "ccd", "b"]
    for i, text in enumerate(texts):
        store.put(("docs", "x" if i % 2 else "y"), f"k{i}", {"text": text, "n": i})
    store.put(("docs", "y"), "many", {"text": "dd", "more": ["aa", "bd"]},
              index=["text", "more[*]"])
    store.put(("docs", "x"), "unscored", {"text": "aaaa", "n": 3}, index=False)
    store.put(("elsewhere",), "k", {"text": "aaaa"})


def _same(got: list[Any], want: list[Any]) -> bool:
    """The same items in the same order, with the same scores (float32 apart)."""
    return [i.key for i in got] == [i.key for i in want] and all(
        a.score == b.score or a.score == pytest.approx(b.score, abs=1e-5)
        for a, b in zip(got, want, strict=True))


def test_the_store_searches_by_distance_where_the_extension_is(open_items: Any) -> None:
    assert open_items()._by_distance
    assert not open_items(url="memory://")._by_distance


@pytest.mark.parametrize("distance", DISTANCES)
def test_every_distance_ranks_as_the_python_path(open_items: Any, distance: str) -> None:
    ours, python = open_items(distance), open_items(distance, url="memory://")
    _fill(ours)
    _fill(python)
    for query in ["a", "dd", "cab", "bbbb", "zzz"]:
        for limit, offset in [(10, 0), (3, 0), (3, 2), (4, 9), (5, 20), (2, 11)]:
            want = python.search(("docs",), query=query, limit=limit, offset=offset)
            got = ours.search(("docs",), query=query, limit=limit, offset=offset)
            assert _same(got, want), (query, limit, offset, got, want)
        for condition in [{"n": {"$gte": 3}}, {"n": 3}, {"n": {"$lt": 0}}]:
            want = python.search(("docs",), query=query, filter=condition, limit=3, offset=1)
            got = ours.search(("docs",), query=query, filter=condition, limit=3, offset=1)
            assert _same(got, want), (query, condition, got, want)


def test_scores_follow_postgres_stores_conventions(open_items: Any) -> None:
    [query, stored] = _embed(["a", "dddd"])
    dot = sum(q * v for q, v in zip(query, stored, strict=True))
    for distance, want in [("cosine", dot / math.hypot(*query) / math.hypot(*stored)),
                           ("l2", -math.dist(query, stored)), ("inner_product", dot)]:
        store = open_items(distance)
        store.put((distance,), "d", {"text": "dddd"})
        [found] = store.search((distance,), query="a")
        assert found.score == pytest.approx(want, abs=1e-5)


def test_an_unknown_distance_is_refused() -> None:
    with pytest.raises(ValueError, match="unsupported distance_type 'dot'"):
        LedgerStore(open_store("memory://"), index={**_index(), "distance_type": "dot"})


def test_vectors_are_written_with_their_item_and_only_for_its_version(
        open_items: Any, pgvector_url: str, namespace: str) -> None:
    store = open_items()
    store.put(("n",), "k", {"text": "abc"})
    session = item_session_id(("n",), "k")
    assert _rows(pgvector_url, namespace, session) == [(session, 1)]
    store.put(("n",), "k", {"text": "dd"})
    assert _rows(pgvector_url, namespace, session) == [(session, 2)]  # the newest replaces
    store.put(("n",), "k", {"text": "abc"}, index=False)  # no vectors: the rows stay...
    assert _rows(pgvector_url, namespace, session) == [(session, 2)]
    assert [(f.key, f.score) for f in store.search(("n",), query="d")] == [("k", None)]
    for _ in range(20):  # ...until the trim drops them with their entry
        store.put(("n",), "k", {"text": "dd"}, index=False)
    assert _rows(pgvector_url, namespace, session) == []
    store.delete(("n",), "k")
    assert _rows(pgvector_url, namespace, session) == []
    assert store.search(("n",), query="d") == []


def test_an_item_whose_vectors_fail_is_not_stored(open_items: Any, pgvector_url: str,
                                                  namespace: str) -> None:
    store = open_items()
    store.embeddings.embed_documents = lambda texts: [[math.nan] * 5 for _ in texts]  # type: ignore[union-attr, method-assign]
    with pytest.raises(Exception, match="NaN"):
        store.put(("n",), "k", {"text": "abc"})
    assert store.get(("n",), "k") is None
    assert _rows(pgvector_url, namespace) == []


def test_a_refused_append_writes_no_vectors(open_items: Any, pgvector_url: str,
                                            namespace: str) -> None:
    store = open_items()
    session = item_session_id(("users", "ann"), "k")
    store.store.session(session, user="bob").append([Message(role="system", content="not an item")])
    tagged = LedgerStore(store.store, index=_index(), user_label=1)
    with pytest.raises(SessionUserError):
        tagged.put(("users", "ann"), "k", {"text": "abc"})
    assert _rows(pgvector_url, namespace) == []


def test_an_expired_item_is_never_found(open_items: Any, clock: FakeClock) -> None:
    store = open_items()
    store.put(("t",), "short", {"text": "aaa"}, ttl=1)
    store.put(("t",), "long", {"text": "aab"}, ttl=10)
    assert {f.key for f in store.search(("t",), query="a")} == {"short", "long"}
    clock.advance(120)
    assert [f.key for f in store.search(("t",), query="a")] == ["long"]
    assert [f.key for f in store.search(("t",), query="a", refresh_ttl=True)] == ["long"]
    clock.advance(9 * 60)  # 11 minutes after the put, 9 after the refresh
    assert [f.key for f in store.search(("t",), query="a")] == ["long"]


def test_namespace_labels_stay_distinct_in_the_prefix(open_items: Any) -> None:
    store, python = open_items(), open_items(url="memory://")
    for both in (store, python):
        for i, labels in enumerate(TRICKY):
            both.put(labels, f"k{i}", {"text": "a" * (i + 1)})
    for labels in TRICKY:
        got = sorted(f.key for f in store.search(labels, query="a", limit=100))
        assert got == sorted(f.key for f in python.search(labels, query="a", limit=100))
        assert got, labels
    assert sorted(f.namespace for f in store.search(("a_",), query="a", limit=100)) == [
        ("a_",), ("a_", "x")]


def test_a_store_without_the_privilege_scores_in_python(pgvector_server: PostgresServer,
                                                        namespace: str) -> None:
    admin = pgvector_server.url.rsplit("/", 1)[0] + "/postgres"
    database, role = f"d{namespace[4:]}", f"r{namespace[4:]}"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f"CREATE ROLE {role} LOGIN")
        connection.execute(f"CREATE DATABASE {database} OWNER {role}")
    url = pgvector_server.url.replace("postgres@", f"{role}@").rsplit("/", 1)[0] + "/" + database
    with LedgerStore(open_store(f"{url}?migrate=true"), index=_index(),
                     owns_store=True) as store:
        assert not store._by_distance  # the extension is not trusted: not created
        store.put(("p",), "k", {"text": "a"})
        assert [f.key for f in store.search(("p",), query="a")] == ["k"]


def test_without_migrate_the_table_must_exist(pgvector_server: PostgresServer,
                                              namespace: str) -> None:
    schema = f"s{namespace[4:]}"
    url = f"{pgvector_server.url}?schema={schema}"
    open_store(f"{url}&migrate=true").close()  # makes the schema and the table
    with psycopg.connect(pgvector_server.url, autocommit=True) as connection:
        connection.execute(f"DROP TABLE {schema}.item_vectors")
    with LedgerStore(open_store(f"{url}&migrate=false"), index=_index(),
                     owns_store=True) as store:
        assert not store._by_distance
    open_store(f"{url}&migrate=true").close()
    with LedgerStore(open_store(f"{url}&migrate=false"), index=_index(),
                     owns_store=True) as store:
        assert store._by_distance


def test_an_encrypting_store_keeps_its_embeddings_sealed(pgvector_url: str,
                                                         namespace: str) -> None:
    keyring = Keyring({"k1": Keyring.new_key()}, current="k1")
    with LedgerStore(open_store(f"{pgvector_url}?namespace={namespace}", encryption=keyring),
                     index=_index(), owns_store=True) as store:
        assert not store._by_distance
        store.put(("s",), "k", {"text": "a"})
        assert [f.key for f in store.search(("s",), query="a")] == ["k"]
    assert _rows(pgvector_url, namespace) == []


def test_the_async_store_searches_by_distance(pgvector_url: str, namespace: str) -> None:
    asyncio.run(_searched_async(f"{pgvector_url}?namespace={namespace}"))


async def _searched_async(url: str) -> None:
    store = AsyncLedgerStore(await open_async_store(url),
                             index=_index("l2"), owns_store=True)
    async with store:
        assert store._by_distance
        await store.aput(("a",), "near", {"text": "aa"})
        await store.aput(("a",), "far", {"text": "dddddd"})
        await store.aput(("a",), "plain", {"text": "aa"}, index=False)
        found = await store.asearch(("a",), query="aa", limit=2, offset=1)
        assert [f.key for f in found] == ["far", "plain"]
        assert found[1].score is None
        assert [f.key for f in await store.asearch(("a",), query="aa", offset=2)] == ["plain"]
        filtered = await store.asearch(("a",), query="aa", filter={"text": "aa"})
        assert [f.key for f in filtered] == ["near", "plain"]


def test_a_superuser_store_creates_the_extension(pgvector_server: PostgresServer,
                                                 namespace: str) -> None:
    database = f"d{namespace[4:]}"
    admin = pgvector_server.url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {database}")
    url = pgvector_server.url.rsplit("/", 1)[0] + "/" + database
    with LedgerStore(open_store(f"{url}?migrate=true"), index=_index(),
                     owns_store=True) as store:
        assert store._by_distance
    with psycopg.connect(url) as connection:
        assert connection.execute(
            "SELECT count(*) FROM pg_extension WHERE extname = 'vector'").fetchone() == (1,)


def test_a_selective_filter_reads_candidates_page_by_page(open_items: Any) -> None:
    ours, python = open_items(), open_items(url="memory://")
    for store in (ours, python):
        store.batch([PutOp(("many",), f"k{i:03}", {"text": "ab" * (i % 7) + "c" * (i % 5),
                                                    "n": i}) for i in range(240)])
    condition = {"n": {"$gte": 200}}
    for offset in (0, 5, 38, 45):
        want = python.search(("many",), query="abc", filter=condition, limit=4, offset=offset)
        got = ours.search(("many",), query="abc", filter=condition, limit=4, offset=offset)
        assert _same(got, want), offset
        assert len(got) == max(0, min(4, 40 - offset))


def test_a_role_without_grants_on_the_table_scores_in_python(pgvector_server: PostgresServer,
                                                             namespace: str) -> None:
    role, schema = f"r{namespace[4:]}", f"g{namespace[4:]}"
    open_store(f"{pgvector_server.url}?schema={schema}&migrate=true").close()
    with psycopg.connect(pgvector_server.url, autocommit=True) as connection:
        connection.execute(f"DROP TABLE {schema}.item_vectors")
        connection.execute(f"CREATE ROLE {role} LOGIN")
        connection.execute(f"GRANT CREATE ON DATABASE chatledger TO {role}")
        connection.execute(f"GRANT USAGE, CREATE ON SCHEMA {schema} TO {role}")
        for table in ("sessions", "entries", "message_ids", "schema_version"):
            connection.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE"
                               f" ON {schema}.{table} TO {role}")
    url = pgvector_server.url.replace("postgres@", f"{role}@") + f"?schema={schema}"
    for migrate in ("false", "true"):  # true: may not reference entries, goes on without
        with LedgerStore(open_store(f"{url}&migrate={migrate}"), index=_index(),
                         owns_store=True) as store:
            assert not store._by_distance
            store.put(("g",), "k", {"text": "a"})
            assert [f.key for f in store.search(("g",), query="a")] == ["k"]
    open_store(f"{pgvector_server.url}?schema={schema}&migrate=true").close()
    with LedgerStore(open_store(url), index=_index(), owns_store=True) as store:
        assert not store._by_distance  # the table is there, the grants are not
    with psycopg.connect(pgvector_server.url, autocommit=True) as connection:
        connection.execute(f"GRANT SELECT, INSERT ON {schema}.item_vectors TO {role}")
    with LedgerStore(open_store(url), index=_index(), owns_store=True) as store:
        assert not store._by_distance  # a put replaces the older rows: DELETE too
    with psycopg.connect(pgvector_server.url, autocommit=True) as connection:
        connection.execute(f"GRANT DELETE ON {schema}.item_vectors TO {role}")
    with LedgerStore(open_store(url), index=_index(), owns_store=True) as store:
        assert store._by_distance
        store.put(("g",), "k", {"text": "b"})
        assert [f.key for f in store.search(("g",), query="b")] == ["k"]


def test_migrate_schema_creates_the_table(pgvector_server: PostgresServer,
                                          namespace: str) -> None:
    url = f"{pgvector_server.url}?schema=m{namespace[4:]}"
    open_store(f"{url}&migrate=true").close()
    with psycopg.connect(pgvector_server.url, autocommit=True) as connection:
        connection.execute(f"DROP TABLE m{namespace[4:]}.item_vectors")
    with open_store(url) as store:
        assert store._backend.migrate_schema() == []  # type: ignore[attr-defined]
        assert store._backend.vectors is not None  # type: ignore[attr-defined]


def test_the_fixture_says_what_is_missing(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Any) -> None:
    with pytest.raises(RuntimeError, match="does not run as"):
        _pgvector_server._check_runnable(Path("/bin/false"))
    monkeypatch.setattr(_pgvector_server.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(RuntimeError, match="need the pgserver wheel"):
        _pgvector_server.pgvector_bin_dir()
    spec = type("Spec", (), {"origin": str(tmp_path / "__init__.py")})
    monkeypatch.setattr(_pgvector_server.importlib.util, "find_spec", lambda name: spec)
    with pytest.raises(RuntimeError, match="has no PostgreSQL binaries"):
        _pgvector_server.pgvector_bin_dir()


async def _async_created(url: str) -> bool:
    store = AsyncLedgerStore(await open_async_store(f"{url}?migrate=true"), index=_index(),
                             owns_store=True)
    async with store:
        return store._by_distance


def test_the_async_backend_creates_the_extension(pgvector_server: PostgresServer,
                                                 namespace: str) -> None:
    database = f"a{namespace[4:]}"
    admin = pgvector_server.url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {database}")
    assert asyncio.run(_async_created(pgvector_server.url.rsplit("/", 1)[0] + "/" + database))
