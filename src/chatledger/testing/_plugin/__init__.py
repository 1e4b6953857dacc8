"""The chatledger pytest plugin: real stores for tests of stateful agents.

Registered through the ``pytest11`` entry point, so installing chatledger is
enough. Fixtures: ``ledger_store`` and ``async_ledger_store`` (parametrized
over the configured URLs; each test in a namespace of its own, purged when it
ends), ``ledger_url`` (the same store, for code that opens its own),
``ledger_session``, ``seed_session``, ``ledger_faults`` (a private Redis behind
a fault proxy) and ``ledger_probe`` (what every store call did). Options, each
with an ini twin: ``--chatledger-url`` (``chatledger_urls``; repeatable;
default ``memory://`` and a temporary ``sqlite://``; the word ``redis`` starts
a private ``redis-server``) and ``--chatledger-ttl`` (``chatledger_ttl``).
``@pytest.mark.chatledger(urls=[...], ttl=..., options={...})`` overrides them
for a test or a module. A mistake in any of them (an unknown argument or URL
scheme, a string for ``urls``) is a usage error before any test runs.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest

from ... import _events
from ..._async.store import AsyncStore, open_async_store
from ..._options import RetryPolicy
from ..._sync.store import Session, Store
from .._ledger_faults import LedgerFaults
from .._ledger_probe import LedgerProbe
from .._proxy import FaultProxy
from .._redis_server import RedisServer
from .report import ProbeFirst
from .seed import Transcript, seed
from .targets import DEFAULT_URLS, Servers, Target, backend_id, test_namespace
from .usage import check_marker, check_ttl_once, check_url, configured_urls, seconds

__all__ = ["LedgerFaults", "LedgerProbe"]

_FAULTY = "redis behind a fault proxy"
# A faulty store gives up fast, so a test of an outage does not wait out the
# production deadline; @pytest.mark.chatledger(options=...) changes it.
_FAULTY_OPTIONS: dict[str, Any] = {"timeout": 0.5, "retry": RetryPolicy(deadline=2.0)}
_PROBE = pytest.StashKey[LedgerProbe]()
SeedSession = Callable[..., tuple[Session, int]]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("chatledger", "chatledger: stores for tests of agent memory")
    group.addoption("--chatledger-url", action="append", dest="chatledger_urls", default=None,
                    metavar="URL", help="a store URL to run ledger_store tests against "
                    "(repeatable; 'redis', 'postgres' or 'dynamodb' starts a private server)")
    group.addoption("--chatledger-ttl", dest="chatledger_ttl", default=None, metavar="SECONDS",
                    help="the ttl of the test stores (default: none)")
    parser.addini("chatledger_urls", type="linelist", default=list(DEFAULT_URLS),
                  help="store URLs for ledger_store tests (default: memory:// and sqlite://)")
    parser.addini("chatledger_ttl", default="", help="the ttl of the test stores, in seconds")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "chatledger(urls=None, ttl=None, options=None): the "
                            "store URLs, ttl and store options of a test or module")
    urls, where = configured_urls(config)
    for url in urls:
        check_url(url, where)
    ttl = _plugin_ttl(config)
    if ttl:
        seconds(ttl, "--chatledger-ttl or the ini's chatledger_ttl")
        check_ttl_once(urls, "--chatledger-ttl or the ini's chatledger_ttl")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "_chatledger_url" not in metafunc.fixturenames:
        return
    if "ledger_faults" in metafunc.fixturenames:
        urls = [_FAULTY]
    else:
        chosen = _marked(metafunc.definition, "urls")
        # Anything but a list is refused once collection ends (pytest_collection_modifyitems).
        urls = list(chosen) if isinstance(chosen, (list, tuple)) else []
        urls = urls or configured_urls(metafunc.config)[0]
    ids = ["redis-faults" if url == _FAULTY else backend_id(url) for url in urls]
    metafunc.parametrize("_chatledger_url", urls, indirect=True, ids=ids)


def pytest_collection_modifyitems(session: pytest.Session, items: list[pytest.Item]) -> None:
    # Here, not in pytest_generate_tests: a UsageError raised while a module is
    # collected becomes that module's collection error, traceback and all.
    try:
        for item in items:
            for marker in item.iter_markers("chatledger"):
                check_marker(marker, item.nodeid.partition("[")[0])
            _check_ttl_given_once(item)
    except pytest.UsageError as exc:
        if not hasattr(session.config, "workerinput"):
            raise
        # An xdist worker's UsageError is lost on the way to the controller (it
        # reports a crashed test instead); a worker that stops with nothing to
        # run has the controller print its reason, in one line.
        items.clear()
        session.shouldstop = str(exc)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    probe = item.stash.get(_PROBE, None)
    if probe is not None and report.failed and report.when == "call":
        # pytest prints any longrepr that has toterminal(); its type names only its own.
        report.longrepr = ProbeFirst(probe.summary(), report.longrepr)  # type: ignore[assignment]
    return report


# -- fixtures -------------------------------------------------------------------


@pytest.fixture(scope="session")
def _chatledger_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    servers = Servers(tmp_path_factory.mktemp("chatledger"))
    yield servers
    servers.stop()


@pytest.fixture
def _chatledger_url(request: pytest.FixtureRequest, _chatledger_servers: Servers) -> str:
    configured: str = request.param
    if configured == _FAULTY:
        faults: LedgerFaults = request.getfixturevalue("ledger_faults")
        return faults.url
    return _chatledger_servers.resolve(configured)


@pytest.fixture
def ledger_target(request: pytest.FixtureRequest, _chatledger_url: str) -> Iterator[Target]:
    """The test's store: URL, namespace and options; its sessions are purged at the end."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    faulty = "ledger_faults" in request.fixturenames  # its server goes with the test
    target = Target(_chatledger_url, test_namespace(request.node.nodeid, worker),
                    _options(request, faulty), disposable=faulty)
    with target.purged():
        yield target


@pytest.fixture
def ledger_url(ledger_target: Target) -> str:
    """The test's store as a URL (with its namespace), for code that opens its own store."""
    return ledger_target.url_with_namespace


@pytest.fixture
def ledger_store(ledger_target: Target) -> Iterator[Store]:
    """A store on each configured URL, in a namespace of the test's own."""
    with ledger_target.open() as store:
        yield store


@pytest.fixture
def async_ledger_store(ledger_target: Target) -> Iterator[AsyncStore]:
    """The async twin of ``ledger_store``; use it from the test's own event loop."""
    store = asyncio.run(open_async_store(ledger_target.url, namespace=ledger_target.namespace,
                                         **ledger_target.options))
    yield store
    try:
        asyncio.run(store.close())
    except RuntimeError as exc:
        # Connections made in the test's event loop were closed when that loop
        # ended; closing them again from this one can only say so.
        if "closed" not in str(exc):
            raise


@pytest.fixture
def ledger_session(ledger_store: Store) -> Session:
    """A new, empty session in the test's store."""
    return ledger_store.session(f"session-{uuid.uuid4().hex[:8]}")


@pytest.fixture
def seed_session(ledger_store: Store) -> SeedSession:
    """``seed_session(transcript, session_id=None)`` -> (session, version).

    A transcript is a list of messages or records, or a .json, .jsonl or .yaml file.
    """

    def seeded(transcript: Transcript, session_id: str | None = None) -> tuple[Session, int]:
        session = ledger_store.session(session_id or f"seeded-{uuid.uuid4().hex[:8]}")
        return session, seed(session, transcript)

    return seeded


@pytest.fixture
def ledger_faults() -> Iterator[LedgerFaults]:
    """A private redis-server behind a fault proxy; ``ledger_store`` goes through it."""
    server = RedisServer().start()
    try:
        faults = LedgerFaults(server, FaultProxy(server.host, server.port).start())
    except BaseException:
        server.stop()
        raise
    yield faults
    faults.stop()


@pytest.fixture
def ledger_probe(request: pytest.FixtureRequest) -> Iterator[LedgerProbe]:
    """Every store call of the test, counted; its summary is printed if the test fails."""
    probe = LedgerProbe()
    request.node.stash[_PROBE] = probe
    with _events.listening(probe.record):
        yield probe


def _options(request: pytest.FixtureRequest, faulty: bool) -> dict[str, Any]:
    options: dict[str, Any] = dict(_FAULTY_OPTIONS) if faulty else {}
    ttl = _marked(request.node, "ttl") or _plugin_ttl(request.config)
    if ttl:  # checked before the run (pytest_configure, pytest_collection_modifyitems)
        options["ttl"] = float(ttl)
    # Every marker's options, a class's over its module's and the test's over both.
    for marker in reversed(list(request.node.iter_markers("chatledger"))):
        options.update(marker.kwargs.get("options") or {})
    return options


def _check_ttl_given_once(item: pytest.Item) -> None:
    """A ttl of a marker, or of the plugin beside a marker's URL, with ``?ttl=`` in the
    test's URL: the store would refuse it in the test's setup and again in its teardown."""
    callspec = getattr(item, "callspec", None)
    url = callspec.params.get("_chatledger_url") if callspec is not None else None
    if not isinstance(url, str) or url == _FAULTY:
        return
    if _marked(item, "ttl") is not None:
        where = f"@pytest.mark.chatledger(ttl=...) on {item.nodeid.partition('[')[0]}"
    elif _plugin_ttl(item.config):
        where = "the plugin's ttl (--chatledger-ttl or the ini's chatledger_ttl)"
    else:
        return
    check_ttl_once([url], where)


def _plugin_ttl(config: pytest.Config) -> Any:
    """The ttl given to the plugin: ``--chatledger-ttl``, else the ini's ``chatledger_ttl``."""
    return config.getoption("chatledger_ttl") or config.getini("chatledger_ttl")


def _marked(node: pytest.Item | Any, key: str) -> Any:
    """``key`` as the closest ``chatledger`` marker that gives it says (the test's, its
    class's, its module's): a test's ``ttl=`` keeps its module's ``urls=``."""
    for marker in node.iter_markers("chatledger"):
        if key in marker.kwargs:
            return marker.kwargs[key]
    return None
