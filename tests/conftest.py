"""Fixtures shared by every test: the backend matrix, a fake clock, stores."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from chatledger import RetryPolicy, Store, open_store
from chatledger._backends.contract import PAGE
from tests.backends import CASES, DEFAULT_BACKENDS, BackendCase, left_to_twin

pytest_plugins = ["tests.redis_fixtures", "tests.postgres_fixtures", "tests.dynamodb_fixtures",
                  "tests.dynalite_fixtures", "tests.spawned", "pytester"]

# No time limit on a hypothesis example, and no complaint that generating them
# is slow: both are timed assertions, which fail on a loaded machine and prove
# nothing (speed is measured by the benchmarks). Tests may still narrow this.
settings.register_profile("chatledger", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("chatledger")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--backends", default=DEFAULT_BACKENDS,
        help=f"comma-separated backends for the contract suite (default: {DEFAULT_BACKENDS}; "
             f"known: {','.join(CASES)})",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        names = [n for n in metafunc.config.getoption("--backends").split(",") if n]
        unknown = set(names) - set(CASES)
        if unknown:
            raise pytest.UsageError(f"unknown backends {sorted(unknown)}; known: {list(CASES)}")
        metafunc.parametrize("backend", [CASES[n] for n in names], ids=names, indirect=True)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the user_index tests of backend cases that keep no user index, the
    store-logic tests an async case leaves to its sync twin (tests/backends.py), and the
    dynalite tests unless ``--backends`` names dynalite (an opt-in: a deselected test
    is not run, where a skipped one would pass for run)."""
    backends = config.getoption("--backends").split(",")
    dynalite = "dynalite" in backends
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        case = callspec.params.get("backend") if callspec is not None else None
        without = isinstance(case, BackendCase) and not case.user_index
        unwanted = (without and item.get_closest_marker("user_index")) or (
            not dynalite and item.get_closest_marker("dynalite")) or (
            isinstance(case, BackendCase)
            and left_to_twin(case, item.path.stem, backends))
        (dropped if unwanted else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> BackendCase:
    case: BackendCase = request.param
    return case


@pytest.fixture
def session_page(backend: BackendCase, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many session ids a page holds on this case (smaller where it is slow)."""
    if backend.small_pages is None:
        return PAGE
    where, size = backend.small_pages
    for path in (where,) if isinstance(where, str) else where:
        monkeypatch.setattr(path, size)
    return size


class FakeClock:
    """A wall clock that moves only when told to: TTL tests without sleeping."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def ledger_url(backend: BackendCase, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return backend.url(request, tmp_path)


OpenLedger = Callable[..., Store]


@contextmanager
def store_opener(default_url: str, opener: Callable[..., Any] = open_store,
                 **defaults: Any) -> Iterator[OpenLedger]:
    """A function that opens stores (``default_url`` and ``defaults`` unless told
    otherwise), all closed when the block ends."""
    opened: list[Store] = []

    def open_(url: str = default_url, **options: Any) -> Store:
        store: Store = opener(url, **{**defaults, **options})
        opened.append(store)
        return store

    try:
        yield open_
    finally:
        for store in opened:
            store.close()


@pytest.fixture
def namespace() -> str:
    """A fresh namespace: a test's sessions are its own on a shared server."""
    return f"t-{uuid.uuid4().hex[:12]}"


def opener_on(url_fixture: str) -> Any:
    """A fixture that opens stores on the URL that fixture ``url_fixture`` gives (or
    on ``url=``): the test's namespace, no retries, all closed when the test ends.

    Each backend's conftest names its own: ``open_redis = opener_on("redis_url")``.
    """

    @pytest.fixture
    def open_on(request: pytest.FixtureRequest, namespace: str) -> Iterator[OpenLedger]:
        with store_opener(request.getfixturevalue(url_fixture), namespace=namespace,
                          retry=RetryPolicy.none()) as open_:
            yield open_

    return open_on


def resumed_after(server_fixture: str) -> Any:
    """A fixture giving the server of fixture ``server_fixture``, resumed after the
    test if it is still running (a test that pauses it may fail before resuming it)."""

    @pytest.fixture
    def paused(request: pytest.FixtureRequest) -> Iterator[Any]:
        server = request.getfixturevalue(server_fixture)
        yield server
        if server.running:
            server.resume()

    return paused


def retrying(attempts: int = 8, deadline: float = 10.0) -> RetryPolicy:
    """A patient policy with short backoffs, for a store that must ride out a fault."""
    return RetryPolicy(attempts=attempts, backoff=0.01, max_backoff=0.05, deadline=deadline)


@pytest.fixture
def open_ledger(
    backend: BackendCase, ledger_url: str, clock: FakeClock
) -> Iterator[OpenLedger]:
    """Open stores on the test's backend: a fresh namespace, the fake clock, no retries."""
    defaults: dict[str, Any] = {"namespace": f"test-{uuid.uuid4().hex[:12]}",
                                "retry": RetryPolicy.none()}
    if backend.injectable_clock:
        defaults["clock"] = clock
    with store_opener(ledger_url, backend.open, **defaults) as open_:
        yield open_


@pytest.fixture
def store(open_ledger: OpenLedger) -> Store:
    return open_ledger()


@pytest.fixture
def advance_time(backend: BackendCase, clock: FakeClock) -> Callable[[float], None]:
    """Let ``seconds`` pass for expiry: the fake clock where the backend takes one,
    otherwise real time (then the server's own expiry is what is under test)."""

    def advance(seconds: float) -> None:
        if backend.injectable_clock:
            clock.advance(seconds)
        else:
            import time

            time.sleep(seconds)

    return advance
