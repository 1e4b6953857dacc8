"""The table of backends the contract suite runs on.

A new backend adds one ``BackendCase`` here: how to get its URL for a test,
whether its expiry clock can be injected, and whether several processes can
share it. Each case runs twice: through the sync store, and (``-async``)
through the async store and the backend's async form, seen through
:mod:`tests.blocking`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from chatledger import open_store
from chatledger._backends.contract import ReadQuery
from tests.blocking import open_blocking_store

UrlFactory = Callable[[pytest.FixtureRequest, Path], str]


@dataclass(frozen=True)
class BackendCase:
    name: str
    url: UrlFactory
    injectable_clock: bool = True
    multiprocess: bool = True  # can several processes share one store?
    is_async: bool = False
    # Runs of the model-based test (tests/contract/test_model.py). The ledger rules
    # are checked at full length on memory and SQLite, and at half on standalone
    # Redis (its Lua scripts); Sentinel and Cluster run the same scripts, and an
    # async case the code its sync twin is generated from, so a shorter run there
    # checks their I/O layers (cluster-async at full length alone took 110 s of
    # the suite's 10 minutes).
    model_examples: int = 100
    # Pairs each of the 8 processes appends in tests/contract/test_concurrency.py.
    # Every backend but DynamoDB's emulator takes 200 (3,200 messages); moto
    # serves one request at a time in Python, about 30 transactions a second on
    # a loaded 2-core machine, so 30 (480 messages, every writer racing the
    # others for each version) proves the same there in a small share of the time.
    concurrent_pairs: int = 200
    # Versions the 8 processes of test_concurrency.py race for with expect_version, each
    # won once. On moto, where 7 of the 8 attempts at each version queue behind the
    # winner's, 40 versions (320 attempts) check the same rule in about a quarter the time.
    raced_versions: int = 150
    # Options every store of this case opens with, unless the test gives its own.
    defaults: tuple[tuple[str, Any], ...] = ()
    # Whether the backend keeps a user index (user=, forget_user). The tests marked
    # user_index are deselected on a case without one; tests/erasure/
    # test_without_user_index.py checks its clear refusal instead.
    user_index: bool = True
    # Where the backend reads its page of session ids (a module attribute, or several),
    # and the smaller page the paging tests use there (the session_page fixture): they
    # create about two pages of sessions, 1,000 and more at the contract's 500, which
    # on moto's DynamoDB took over a minute. None: the contract's page.
    small_pages: tuple[str | tuple[str, ...], int] | None = None
    # The share of a property test's examples drawn on this case (tests/contract/
    # test_serialization.py, test_context_properties.py): their logic is the
    # store's, the same on every backend; a slow emulator checks its I/O with fewer.
    fuzz_share: float = 1.0
    # Left out of the default --backends: run only when named (--backends=dynalite).
    opt_in: bool = False
    # An async case whose I/O is slow: the modules of STORE_LOGIC are deselected on it
    # while its sync twin runs in the same session (see STORE_LOGIC).
    logic_on_twin: bool = False

    def open(self, url: str, **options: Any) -> Any:
        """A store of this case: sync, or async behind a blocking view."""
        return (open_blocking_store if self.is_async else open_store)(
            url, **{**dict(self.defaults), **options})

    @staticmethod
    def corrupt(store: Any, session: str, seq: int, blob: bytes) -> None:
        """Write a garbage entry straight into the backend (promise 7's second half)."""
        store._backend.corrupt_entry(session, seq, blob)

    @classmethod
    def copy_entry(cls, source: Any, session: str, seq: int, target: Any,
                   to_session: str, to_seq: int) -> bytes:
        """Copy the stored bytes of entry ``seq`` onto entry ``to_seq`` of another
        place (as anyone who can write the database can); returns the bytes."""
        blob = raw_entry(source, session, seq)
        cls.corrupt(target, to_session, to_seq, blob)
        return blob


def raw_entry(store: Any, session: str, seq: int) -> bytes:
    """The bytes the backend holds for entry ``seq`` of ``session``, as it holds them."""
    raw = store._backend.read(session, ReadQuery(after=seq - 1, limit=1))
    assert [found for found, _ in raw.entries] == [seq], "no such entry"
    return bytes(raw.entries[0][1])


_POSTGRES_PAGE = tuple(f"chatledger._backends.{module}.PAGE" for form in ("_async", "_sync")
                       for module in (f"{form}.transactional", f"postgres.{form}.backend"))

_SYNC = [
    BackendCase("memory", lambda request, tmp: f"memory://{uuid.uuid4().hex}", multiprocess=False),
    BackendCase("sqlite", lambda request, tmp: f"sqlite:///{tmp}/ledger.db"),
    # A private redis-server per test session (tests/redis_fixtures.py); the server's
    # own clock expires keys, so time cannot be faked.
    BackendCase("redis", lambda request, tmp: request.getfixturevalue("redis_url"),
                injectable_clock=False, model_examples=50),
    # The same through a private Sentinel group: a master, a replica, three sentinels.
    # The Lua scripts and the encoding are the redis case's: its I/O is checked with
    # a quarter of the property examples.
    BackendCase("sentinel", lambda request, tmp: request.getfixturevalue("sentinel_url"),
                injectable_clock=False, model_examples=15, fuzz_share=0.25),
    # A private Redis Cluster: three primaries, a replica each. Fewer model runs: each
    # opens a cluster client (topology, six connections), and the rules the model
    # checks are the standalone scripts', which the redis case runs 50 times (6 runs
    # of 40 steps still take every rule through the cluster client).
    BackendCase("cluster", lambda request, tmp: request.getfixturevalue("cluster_url"),
                injectable_clock=False, model_examples=6, fuzz_share=0.25),
    # A private PostgreSQL per test session (tests/postgres_fixtures.py): initdb
    # and postgres on a free loopback port; expiry uses the store's clock.
    # Its paging tests take pages of 50: 1,100 sessions, a transaction each, were most
    # of the paging tests' time on all backends together; SQLite keeps the contract's
    # 500 for the transactional base both share (the page size is a parameter there).
    BackendCase("postgres", lambda request, tmp: request.getfixturevalue("postgres_url"),
                model_examples=20, small_pages=(_POSTGRES_PAGE, 50)),
    # moto's DynamoDB in server mode, a table per test (tests/dynamodb_fixtures.py);
    # expiry uses the store's clock. Its async form is native (aiobotocore). A
    # request may take 5 s: the emulator serves one at a time, and 8 processes
    # racing on a loaded machine queue behind each other.
    BackendCase("dynamodb", lambda request, tmp: request.getfixturevalue("dynamodb_url"),
                model_examples=10, concurrent_pairs=30, raced_versions=40,
                defaults=(("timeout", 5.0),),
                small_pages=("chatledger._backends.dynamodb.layout.PAGE", 7),
                fuzz_share=0.15),
    # dynalite (npm), a second opinion on moto's emulation (tests/dynalite_fixtures.py),
    # with the dynamodb case's shortened runs. Opt-in: `scripts/dynalite` installs it
    # and runs the contract suite on it. dynalite 4.0.0 has no transactions, so
    # what writes fails there (docs/backends.md).
    BackendCase("dynalite", lambda request, tmp: request.getfixturevalue("dynalite_url"),
                model_examples=15, concurrent_pairs=50, defaults=(("timeout", 5.0),),
                user_index=False, small_pages=("chatledger._backends.dynamodb.layout.PAGE", 7),
                fuzz_share=0.2, opt_in=True),
]
# The native async backends; SQLite's async form is its sync one in threads, which
# tests/contract/test_async.py covers. The encoding and the ledger rules are the code
# the sync twin is generated from, so an async case's property tests draw at most a
# quarter of the examples: enough to take its own I/O through every shape of message.
# For the same reason its model test takes half its twin's runs (at most 12). The
# spawned writers of tests/contract/test_concurrency.py open sync stores on every
# case (the race is the backend's), so an async case's run there repeats its sync
# twin's: 25 pairs, its result read through the async store.
_ASYNC = [replace(case, name=f"{case.name}-async", is_async=True,
                  model_examples=min(max(case.model_examples // 2, 3), 12),
                  fuzz_share=min(case.fuzz_share, 0.25),
                  concurrent_pairs=min(case.concurrent_pairs, 25),
                  logic_on_twin=case.name == "dynamodb")
          for case in _SYNC if case.name not in ("sqlite", "dynalite")]
# The contract modules about what the store does above the backend: the encoding, the
# redaction hook, encryption, the ledger model. An async case runs that logic in code
# generated from its sync twin's (only the I/O client differs), and the async store's
# own code runs it on every other async case; what is the async case's alone, its I/O,
# the other modules take through every backend method (append, read, paging, expiry,
# races, corruption, keys, rotation). So on a case with logic_on_twin (DynamoDB's, whose
# emulator serves one request at a time) these modules run on the sync twin only, when
# the twin is in the run; `--backends=dynamodb-async` alone runs everything. Checked:
# `--cov=chatledger --cov-branch` of tests/contract on dynamodb,dynamodb-async misses
# the same lines and branches with and without them.
STORE_LOGIC = frozenset({"test_serialization", "test_context_properties", "test_redaction",
                         "test_encryption", "test_model"})

CASES: dict[str, BackendCase] = {case.name: case for case in (*_SYNC, *_ASYNC)}
# What the contract suite runs on unless --backends names others.
DEFAULT_BACKENDS = ",".join(name for name, case in CASES.items() if not case.opt_in)


def left_to_twin(case: BackendCase, module: str, backends: list[str]) -> bool:
    """Whether ``module``'s tests are left to the sync twin of ``case`` (STORE_LOGIC)."""
    twin = case.name.removesuffix("-async")
    return case.logic_on_twin and module in STORE_LOGIC and twin in backends


def fuzz(backend: BackendCase, examples: int) -> settings:
    """Hypothesis settings drawing the case's share of ``examples`` (at least 5)."""
    return settings(max_examples=max(5, round(examples * backend.fuzz_share)), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
