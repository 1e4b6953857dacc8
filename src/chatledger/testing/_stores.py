"""``check_store``: does a LangGraph ``BaseStore`` keep the promises long-term memory
needs? Six clauses, each run through the store's public API only, each with a
verdict and a reason.

- ``expiry``: an item past its TTL is never returned, swept or not.
- ``namespaces``: namespaces are tuples; labels and keys that joined text,
  patterns, escapes or collations would confuse stay distinct and round-trip.
- ``two_writers``: writers putting one key at once lose no acknowledged put
  and tear no value.
- ``retried_put``: what a retry after a lost reply relies on: a repeated put
  leaves one item; puts apply in the order they were acknowledged.
- ``filter_then_limit``: ``search`` filters before ``limit`` and ``offset``.
- ``large_values``: a 1 MiB value comes back equal.

What each clause checks exactly is the docstring of its function in
``_store_clauses`` (``two_writers``: ``_store_writers``), and docs/testing.md.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ._checkpointers import FACTORY_INSTEAD, _ours, _shared
from ._concurrency import check_mode, check_picklable
from ._store_report import ClauseVerdict, StoreReport

if TYPE_CHECKING:
    from langgraph.store.base import BaseStore

    from ._store_clauses import Context, Finding

__all__ = ["CLAUSES", "check_store"]

CLAUSES = ("expiry", "namespaces", "two_writers", "retried_put", "filter_then_limit",
           "large_values")


def check_store(
    factory: str | Callable[[str], Any], target: str | None = None, *,
    clauses: Sequence[str] = CLAUSES, mode: Literal["processes", "threads"] = "processes",
    writers: int = 2, puts: int = 50, ttl_seconds: float = 1.0,
    large_value_bytes: int = 1 << 20, timeout: float = 120.0,
) -> StoreReport:
    """Run ``clauses`` on the store ``factory(target)`` gives; one verdict each.

    ``factory(target)`` returns a sync ``BaseStore``, or a context manager that
    yields one (``SqliteStore.from_conn_string``); as ``"package.module:callable"``
    or a function at the top of an importable module when ``mode="processes"``,
    since each writer of ``two_writers`` is a spawned process that opens its own
    store on ``target``. ``target`` defaults to a file in a new temporary
    directory (a ``sqlite:///`` URL for chatledger's stores, a bare path for any
    other factory). The check calls the store's ``setup()``, if it has one,
    first. Everything it writes is under a namespace new on each call
    (``("chatledger-check", <run>, <clause>, ...)``), so a shared server can be
    reused; nothing is deleted after.

    A store that lives in one process (``InMemoryStore``) is checked with
    ``mode="threads"``: the writers are threads on the one store. ``writers``
    writers make ``puts`` rounds each; ``expiry`` waits ``ttl_seconds`` plus
    1.5 s for items put with that TTL to expire; ``large_values`` puts a value
    of ``large_value_bytes``; ``timeout`` bounds the writers. The other clauses
    run in the calling thread, unbounded (a store whose connection belongs to its
    thread must be called there): bound a store that may hang with the test
    runner's own timeout.
    """
    _check_arguments(clauses, writers=writers, puts=puts, ttl_seconds=ttl_seconds,
                     large_value_bytes=large_value_bytes, timeout=timeout)
    from . import _chat_turns, _store_clauses, _store_writers  # noqa: PLC0415 -- optional extra

    check_mode(mode)
    make = _chat_turns.resolve(factory)
    if mode == "processes" and "two_writers" in clauses and not isinstance(factory, str):
        check_picklable(factory, refusal="check_store's two writers are spawned processes, "
                        "and the factory does not pickle", instead=FACTORY_INSTEAD)
    started = time.monotonic()
    root = ("chatledger-check", uuid.uuid4().hex[:12])
    context = _store_clauses.Context(root, ttl_seconds, large_value_bytes)
    with _shared(target, _ours(factory)) as shared, \
            _store_writers.opened_store(make, shared) as store:
        if callable(setup := getattr(store, "setup", None)):
            setup()
        plan = _store_writers.Writers(factory, shared, context.namespace("writers"),
                                      writers, puts, timeout)
        runs: dict[str, Callable[[], Finding]] = {
            "two_writers": lambda: _store_writers.two_writers(store, plan, mode)}
        verdicts = [_verdict(clause, runs.get(clause) or _one_store(clause, store, context))
                    for clause in clauses]
        return StoreReport(type(store).__name__, tuple(verdicts), time.monotonic() - started)


def _one_store(clause: str, store: BaseStore, context: Context) -> Callable[[], Finding]:
    from . import _store_clauses  # noqa: PLC0415 -- optional extra

    run: Callable[[BaseStore, Context], Finding] = getattr(_store_clauses, clause)
    return lambda: run(store, context)


def _verdict(clause: str, run: Callable[[], Finding]) -> ClauseVerdict:
    started = time.monotonic()
    try:
        verdict, reason = run()
    except Exception as exc:
        verdict, reason = "fail", f"raised {type(exc).__name__}: {exc}"[:300]
    return ClauseVerdict(clause, verdict, reason, time.monotonic() - started)


def _check_arguments(clauses: Sequence[str], *, writers: int, puts: int, ttl_seconds: float,
                     large_value_bytes: int, timeout: float) -> None:
    if not clauses or set(clauses) - set(CLAUSES):
        raise ValueError(f"clauses must be some of {CLAUSES}, not {list(clauses)!r}")
    if writers < 2 or puts < 1:
        raise ValueError(f"writers must be at least 2 and puts at least 1, not "
                         f"{writers}, {puts}")
    if ttl_seconds <= 0 or timeout <= 0:
        raise ValueError(f"ttl_seconds and timeout must be positive, not {ttl_seconds}, "
                         f"{timeout}")
    if large_value_bytes < 1:
        raise ValueError(f"large_value_bytes must be positive, not {large_value_bytes}")
