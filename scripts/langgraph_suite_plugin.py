"""pytest plugin of ``scripts/langgraph_suite``: LangGraph's own tests on our savers.

Loaded with ``-p langgraph_suite_plugin`` into a run of the ``tests/`` folder of
LangGraph's sdist. LangGraph's ``tests/conftest.py`` defines the fixtures
``sync_checkpointer`` and ``async_checkpointer``, parametrized by saver name
("memory", "sqlite", "postgres", ...). This plugin swaps both, before pytest
reads that conftest's fixtures, for fixtures of the same names whose params are
``SAVERS``: LangGraph's own "memory" control saver, and ``LedgerSaver`` /
``AsyncLedgerSaver`` on a temporary SQLite file, on a private redis-server, on a
private PostgreSQL and on a table of a private DynamoDB emulator (moto's server
mode, over HTTP).
LangGraph's source files stay as released.

It also keeps only the tests that use one of those fixtures (and the savers
given by ``--ledger-savers``), and writes every report of them as a JSON line to
``--ledger-results`` for the script's summary.
"""

from __future__ import annotations

import json
import secrets
import tempfile
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

import pytest

from chatledger.langgraph import AsyncLedgerSaver, LedgerSaver
from chatledger.testing import RedisServer

SAVERS = ("memory", "ledger-sqlite", "ledger-redis", "ledger-postgres", "ledger-dynamodb")
FIXTURES = ("sync_checkpointer", "async_checkpointer")
CONFTEST = "tests.conftest"
REPO = Path(__file__).resolve().parent.parent
MemoryFactory = Callable[[], AbstractContextManager[Any]]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("langgraph-suite", "LangGraph's tests on chatledger's savers")
    group.addoption("--ledger-savers", default=",".join(SAVERS),
                    help=f"comma-separated savers to run, of {', '.join(SAVERS)}")
    group.addoption("--ledger-select", type=int, default=0, metavar="N",
                    help="run only N test functions, spread evenly over the selection")
    group.addoption("--ledger-results", default=None, metavar="PATH",
                    help="write one JSON line per test report here")


# -- the fixtures ----------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_plugin_registered(plugin: object) -> None:
    # tryfirst: pytest's fixture manager reads a conftest's fixtures from its module
    # attributes (at registration up to pytest 8, at collection since 9), so
    # replacing the attributes here, first, replaces LangGraph's fixtures.
    if isinstance(plugin, ModuleType) and plugin.__name__ == CONFTEST:
        _swap_fixtures(plugin)


def _swap_fixtures(conftest: ModuleType) -> None:
    missing = [name for name in (*FIXTURES, "_checkpointer_memory") if not hasattr(conftest, name)]
    if missing:  # a LangGraph release that renamed them: say so rather than test nothing
        raise pytest.UsageError(f"{conftest.__file__} has no {', '.join(missing)}")
    memory: MemoryFactory = conftest._checkpointer_memory  # what LangGraph's "memory" uses
    conftest.sync_checkpointer = _sync_fixture(memory)
    conftest.async_checkpointer = _async_fixture(memory)


# Built by functions, not at module level: a module-level fixture of this plugin
# would also be registered globally, under the conftest's, and mask a failed swap.
def _sync_fixture(memory: MemoryFactory) -> Any:
    @pytest.fixture(params=SAVERS)
    def sync_checkpointer(request: pytest.FixtureRequest) -> Iterator[Any]:
        if request.param == "memory":
            with memory() as saver:
                yield saver
            return
        with _ledger_url(request) as url, LedgerSaver.from_url(url) as saver:
            yield saver

    return sync_checkpointer


def _async_fixture(memory: MemoryFactory) -> Any:
    @pytest.fixture(params=SAVERS)
    async def async_checkpointer(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
        if request.param == "memory":
            with memory() as saver:
                yield saver
            return
        with _ledger_url(request) as url:
            async with await AsyncLedgerSaver.from_url(url) as saver:
                yield saver

    return async_checkpointer


@contextmanager
def _ledger_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """A store URL that no other test sees: its own SQLite file, or a server's namespace."""
    if request.param == "ledger-sqlite":
        with tempfile.TemporaryDirectory(prefix="ledger-suite-") as folder:
            yield f"sqlite:///{Path(folder) / 'ledger.db'}"
        return
    # The server lives as long as the session (one per xdist worker), so a test's
    # keys need no cleanup: its namespace isolates them.
    if request.param == "ledger-dynamodb":
        yield request.getfixturevalue("ledger_dynamodb_server").table_url()
        return
    if request.param == "ledger-postgres":
        base = request.getfixturevalue("ledger_postgres_url")
    else:
        server: RedisServer = request.getfixturevalue("ledger_redis_server")
        base = server.url
    # Not uuid4: tests that patch uuid.uuid4 count the ids it hands out.
    yield f"{base}?namespace=t{secrets.token_hex(16)}"


@pytest.fixture(scope="session")
def ledger_redis_server() -> Iterator[RedisServer]:
    """A private redis-server for the session, started only if a test needs it."""
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="session")
def ledger_postgres_url() -> Iterator[str]:
    """A private PostgreSQL for the session, its schema made, started only if needed."""
    from chatledger import open_store  # noqa: PLC0415 -- only when a test needs it
    from chatledger.testing._postgres_server import PostgresServer  # noqa: PLC0415

    with PostgresServer() as server:
        open_store(f"{server.url}?migrate=true").close()
        yield server.url


@pytest.fixture(scope="session")
def ledger_dynamodb_server() -> Iterator[Any]:
    """A private DynamoDB emulator for the session; each test gets a table of its own."""
    from chatledger.testing._dynamodb_server import DynamoDBServer  # noqa: PLC0415

    with DynamoDBServer() as server:
        yield server


# -- selection -------------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)  # before -k deselects: twin keys need every variant
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if items and not any(_saver_of(item) for item in items):
        raise pytest.UsageError("no collected test uses sync_checkpointer or async_checkpointer")
    chosen = _chosen_savers(config)
    twins = _twin_keys(items)
    keep: list[pytest.Item] = []
    for item in items:
        saver = _saver_of(item)
        if saver in chosen:
            # Reports carry user_properties from xdist workers back to the controller.
            item.user_properties += [("ledger_saver", saver), ("ledger_key", twins[item])]
            keep.append(item)
    select = config.getoption("ledger_select")
    if select:
        keep = _spread(keep, select)
    kept = set(keep)
    config.hook.pytest_deselected(items=[item for item in items if item not in kept])
    items[:] = keep


def _chosen_savers(config: pytest.Config) -> set[str]:
    chosen = {name.strip() for name in config.getoption("ledger_savers").split(",") if name}
    unknown = chosen - set(SAVERS)
    if unknown:
        raise pytest.UsageError(f"unknown savers {sorted(unknown)}; known: {', '.join(SAVERS)}")
    return chosen


def _saver_of(item: pytest.Item) -> str | None:
    params = getattr(getattr(item, "callspec", None), "params", {})
    return next((params[name] for name in FIXTURES if name in params), None)


def _twin_keys(items: list[pytest.Item]) -> dict[pytest.Item, str]:
    """A key that a test's variants on each saver share, whatever their other params.

    The variants of one test hold the very same objects as their other params, so
    these are numbered in collection order: identical on every xdist worker. (Not
    from the test id: ids join with "-", so the part of "ledger-sqlite", or of
    "memory" beside a cache param's "memory", is ambiguous.)
    """
    numbers: dict[tuple[str, tuple[tuple[str, int], ...], int], int] = {}
    seen: Counter[tuple[object, ...]] = Counter()
    keys = {}
    for item in items:
        saver = _saver_of(item)
        if saver is None:
            continue
        function = item.nodeid.split("[", 1)[0]
        params = item.callspec.params  # type: ignore[attr-defined]
        others = tuple(sorted((name, id(value)) for name, value in params.items()
                              if name not in FIXTURES))
        # Equal params of two variants (e.g. parametrize([1, 1])) are one object: the
        # how-many-th such variant of this saver tells them apart.
        repeat = seen[function, others, saver]
        seen[function, others, saver] += 1
        number = numbers.setdefault((function, others, repeat), len(numbers))
        keys[item] = f"{function}#{number}"
    return keys


def _spread(items: list[pytest.Item], count: int) -> list[pytest.Item]:
    """All variants of ``count`` test functions picked evenly over the selection.

    Deterministic, so every xdist worker collects the same tests.
    """
    functions = sorted({item.nodeid.split("[", 1)[0] for item in items})
    step = max(len(functions) / count, 1.0)
    picked = {functions[int(i * step)] for i in range(min(count, len(functions)))}
    return [item for item in items if item.nodeid.split("[", 1)[0] in picked]


# -- results ---------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("ledger_results")
    # Only the controller writes: xdist workers send it their reports.
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_ResultsWriter(Path(path)), "ledger-suite-results")


class _ResultsWriter:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._out: TextIO = path.open("w", encoding="utf-8")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        if "ledger_saver" not in props:
            return
        crash = getattr(report.longrepr, "reprcrash", None)
        record = {
            "nodeid": report.nodeid, "saver": props["ledger_saver"],
            "key": props["ledger_key"], "when": report.when, "outcome": report.outcome,
            "xfail": hasattr(report, "wasxfail"), "duration": report.duration,
            "crash": _crash_line(crash) if crash else None,
            # The end of the traceback names the raising frame; the start is pytest's.
            "longrepr": report.longreprtext[-6000:] if report.failed else None,
        }
        self._out.write(json.dumps(record) + "\n")
        self._out.flush()

    def pytest_unconfigure(self) -> None:
        self._out.close()


def _crash_line(crash: Any) -> str:
    """``path:line: first line of the message``, the path short where we can."""
    path = Path(crash.path)
    for base in (Path.cwd(), REPO):  # LangGraph's suite, where pytest runs, or ours
        if path.is_relative_to(base):
            path = path.relative_to(base)
            break
    message = (crash.message.splitlines() or [""])[0]
    return f"{path}:{crash.lineno}: {message}"
