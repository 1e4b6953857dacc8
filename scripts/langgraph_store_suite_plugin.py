"""pytest plugin of ``scripts/langgraph_store_suite``: LangGraph's store tests on LedgerStore.

Loaded with ``-p langgraph_store_suite_plugin`` into a run of the ``tests/``
folder of one of LangGraph's sdists (langgraph-checkpoint, -sqlite, -postgres).
Every collected test gets one more param, ``store``: ``control`` runs it as
released, on the store it was written for; each ``ledger-<backend>`` runs it
with the store class names of its module (``InMemoryStore``, ``SqliteStore``,
``AsyncSqliteStore``, ``PostgresStore``, ``AsyncPostgresStore``) bound to
stand-ins that open ``LedgerStore`` / ``AsyncLedgerStore`` on that backend
(a new namespace per connection string, so a test that opens its file twice
sees its items again). A test that builds the store from a driver connection
(``SqliteStore(sqlite3.connect(...))``) is skipped on ours: it is not black-box.

PostgreSQL's tests connect to ``DEFAULT_URI`` of their conftest: the plugin
starts a private PostgreSQL for the session and points ``DEFAULT_URI`` at it;
with ``CHATLEDGER_STORE_SUITE_PGVECTOR=1`` (the script's ``--pgvector``) one
with the ``vector`` extension (pgserver's binaries), used by the control and
by ledger-postgres alike.
Every report is written as a JSON line to ``--ledger-results``.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

import pytest

from chatledger import open_async_store, open_store
from chatledger.langgraph import AsyncLedgerStore, LedgerStore

STORES = ("control", "ledger-memory", "ledger-sqlite", "ledger-redis", "ledger-postgres",
          "ledger-dynamodb")
SYNC_NAMES = ("InMemoryStore", "SqliteStore", "PostgresStore")
ASYNC_NAMES = ("AsyncSqliteStore", "AsyncPostgresStore")
NOT_BLACK_BOX = "not black-box: builds the store from a driver connection"
NOT_BLACK_BOX_SQL = "not black-box: runs SQL on the control's tables"
# What PostgreSQL's fixtures run through store._cursor() to check that migrations
# are idempotent: nothing to do on ours. Any other statement is a test's own SQL.
FIXTURE_SQL = "DROP TABLE IF EXISTS store_migrations"
_servers: dict[str, Any] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("langgraph-store-suite", "LangGraph's store tests on LedgerStore")
    group.addoption("--ledger-stores", default=",".join(STORES),
                    help=f"comma-separated, of {', '.join(STORES)}")
    group.addoption("--ledger-select", type=int, default=0, metavar="N",
                    help="only N test functions, spread evenly over the selection")
    group.addoption("--ledger-results", default=None, metavar="PATH",
                    help="write one JSON line per test report here")


# -- PostgreSQL for the postgres package's conftest ------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_plugin_registered(plugin: object) -> None:
    # Before the test modules import DEFAULT_URI from their conftest.
    if isinstance(plugin, ModuleType) and plugin.__name__ == "tests.conftest" \
            and hasattr(plugin, "DEFAULT_URI"):
        base = _postgres().url.rsplit("/", 1)[0].replace("postgresql://", "postgres://")
        plugin.DEFAULT_URI = f"{base}/postgres?sslmode=disable"
        plugin.DEFAULT_POSTGRES_URI = f"{base}/"


def _postgres() -> Any:
    if "postgres" not in _servers:
        from chatledger.testing._pgvector_server import pgvector_server  # noqa: PLC0415
        from chatledger.testing._postgres_server import PostgresServer  # noqa: PLC0415

        pgvector = os.environ.get("CHATLEDGER_STORE_SUITE_PGVECTOR") == "1"
        _servers["postgres"] = pgvector_server() if pgvector else PostgresServer().start()
        open_store(f"{_servers['postgres'].url}?migrate=true").close()
    return _servers["postgres"]


def pytest_unconfigure(config: pytest.Config) -> None:
    for server in _servers.values():
        server.stop()
    _servers.clear()


# -- the store param -------------------------------------------------------------------------


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "store_under_test" in metafunc.fixturenames:
        chosen = _chosen(metafunc.config)
        metafunc.parametrize("store_under_test", [s for s in STORES if s in chosen],
                             ids=[f"store={s}" for s in STORES if s in chosen], indirect=True)


def _chosen(config: pytest.Config) -> set[str]:
    chosen = {s.strip() for s in config.getoption("ledger_stores").split(",") if s.strip()}
    if chosen - set(STORES):
        raise pytest.UsageError(f"unknown stores {sorted(chosen - set(STORES))}")
    return chosen


@pytest.fixture(autouse=True)
def store_under_test(request: pytest.FixtureRequest,
                     monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Binds the module's store classes to LedgerStore on the param's backend."""
    kind: str = request.param
    if kind == "control":
        yield kind
        return
    with tempfile.TemporaryDirectory(prefix="ledger-store-suite-") as folder:
        urls = _Urls(kind, request, Path(folder))
        opened: list[Any] = []
        for name in SYNC_NAMES:
            if hasattr(request.module, name):
                monkeypatch.setattr(request.module, name, _sync_shim(urls, opened))
        for name in ASYNC_NAMES:
            if hasattr(request.module, name):
                monkeypatch.setattr(request.module, name, _async_shim(urls))
        yield kind
        for store in opened:
            store.close()


class _Urls:
    """A ledger URL per connection string the test opens: the same string, the same items."""

    def __init__(self, kind: str, request: pytest.FixtureRequest, folder: Path) -> None:
        self._kind, self._request, self._folder = kind, request, folder
        self._known: dict[str, str] = {}

    def __call__(self, conn_string: str | None = None) -> str:
        key = conn_string if conn_string is not None else secrets.token_hex(8)
        if key not in self._known:
            self._known[key] = self._new()
        return self._known[key]

    def _new(self) -> str:
        namespace = f"t{secrets.token_hex(12)}"
        if self._kind == "ledger-memory":
            return f"memory://{namespace}"
        if self._kind == "ledger-sqlite":
            return f"sqlite:///{self._folder / 'ledger.db'}?namespace={namespace}"
        if self._kind == "ledger-postgres":
            return f"{_postgres().url}?namespace={namespace}"
        if self._kind == "ledger-dynamodb":
            server = self._request.getfixturevalue("ledger_dynamodb_server")
            return f"{server.table_url()}&namespace={namespace}"
        server = self._request.getfixturevalue("ledger_redis_server")
        return f"{server.url}?namespace={namespace}"


def _store_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"index": kwargs.get("index"), "ttl": kwargs.get("ttl")}


def _sync_shim(urls: Callable[..., str], opened: list[Any]) -> type:
    class Shim(LedgerStore):
        def __init__(self, conn: Any = None, **kwargs: Any) -> None:
            if conn is not None:
                pytest.skip(NOT_BLACK_BOX)
            super().__init__(open_store(urls()), owns_store=True, **_store_options(kwargs))
            opened.append(self)

        @classmethod
        @contextmanager
        def from_conn_string(cls, conn_string: str, **kwargs: Any) -> Iterator[LedgerStore]:
            with LedgerStore.from_url(urls(conn_string), **_store_options(kwargs)) as store:
                _stand_in_for_sql(store)
                yield store

    return Shim


def _async_shim(urls: Callable[..., str]) -> type:
    class Shim(AsyncLedgerStore):
        def __init__(self, conn: Any = None, **kwargs: Any) -> None:
            pytest.skip(NOT_BLACK_BOX)

        @classmethod
        @asynccontextmanager
        async def from_conn_string(cls, conn_string: str,
                                   **kwargs: Any) -> AsyncIterator[AsyncLedgerStore]:
            store = await open_async_store(urls(conn_string))
            async with AsyncLedgerStore(store, owns_store=True,
                                        **_store_options(kwargs)) as opened:
                _stand_in_for_sql(opened)
                yield opened

    return Shim


class _Cursor:
    """What ``store._cursor()`` yields on ours: the fixtures' one statement, else a skip."""

    def execute(self, query: str, *args: Any) -> None:
        if query.strip() != FIXTURE_SQL:
            pytest.skip(NOT_BLACK_BOX_SQL)


class _AsyncCursor:
    async def execute(self, query: str, *args: Any) -> None:
        _Cursor().execute(query)


def _stand_in_for_sql(store: Any) -> None:
    """PostgreSQL's fixtures edit ``MIGRATIONS`` and run one statement through ``_cursor``."""
    store.MIGRATIONS = []

    @contextmanager
    def cursor() -> Iterator[_Cursor]:
        yield _Cursor()

    @asynccontextmanager
    async def acursor() -> AsyncIterator[_AsyncCursor]:
        yield _AsyncCursor()

    store._cursor = acursor if isinstance(store, AsyncLedgerStore) else cursor


@pytest.fixture(scope="session")
def ledger_redis_server() -> Iterator[Any]:
    from chatledger.testing import RedisServer  # noqa: PLC0415

    with RedisServer() as server:
        yield server


@pytest.fixture(scope="session")
def ledger_dynamodb_server() -> Iterator[Any]:
    from chatledger.testing._dynamodb_server import DynamoDBServer  # noqa: PLC0415

    with DynamoDBServer() as server:
        yield server


# -- selection and results ---------------------------------------------------------------------


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    select = config.getoption("ledger_select")
    if select:
        functions = sorted({item.nodeid.split("[", 1)[0] for item in items})
        step = max(len(functions) / select, 1.0)
        picked = {functions[int(i * step)] for i in range(min(select, len(functions)))}
        kept = [item for item in items if item.nodeid.split("[", 1)[0] in picked]
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept
    for item in items:
        store = item.callspec.params["store_under_test"]  # type: ignore[attr-defined]
        # The package's folder too: two packages both hold tests/test_store.py.
        twin = f"{config.rootpath.name}/{item.nodeid.replace(f'store={store}', '')}"
        item.user_properties += [("store_under_test", store), ("ledger_key", twin)]


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("ledger_results")
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_ResultsWriter(Path(path)), "ledger-store-results")


class _ResultsWriter:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._out: TextIO = path.open("a", encoding="utf-8")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        if "store_under_test" not in props:
            return
        crash = getattr(report.longrepr, "reprcrash", None)
        skipped = report.longrepr[2] if report.skipped and isinstance(
            report.longrepr, tuple) else None
        record = {"nodeid": report.nodeid, "store": props["store_under_test"],
                  "key": props["ledger_key"], "when": report.when, "outcome": report.outcome,
                  "crash": f"{crash.message.splitlines()[0] if crash.message else ''}"
                  if crash else skipped}
        self._out.write(json.dumps(record) + "\n")
        self._out.flush()

    def pytest_unconfigure(self) -> None:
        self._out.close()
