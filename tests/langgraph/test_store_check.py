"""check_store: LedgerStore keeps every clause on every backend; each clause fails
on a store built to break it (so each can fail); the report and its arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from chatledger.langgraph import LedgerStore
from chatledger.testing import ClauseVerdict, StoreReport, check_store
from chatledger.testing._store_clauses import large_value
from tests.langgraph._flawed_store import FlawedStore
from tests.langgraph.conftest import backend_url

LEDGER_STORE = "chatledger.langgraph:LedgerStore.from_url"
SMALL: dict[str, Any] = {"puts": 10, "ttl_seconds": 0.5, "timeout": 120}


@pytest.mark.parametrize("kind", ["sqlite", "redis", "postgres", "dynamodb"])
def test_ledger_store_passes_every_clause_with_writers_in_processes(
        kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    report = check_store(LEDGER_STORE, backend_url(kind, request, tmp_path),
                         **SMALL)
    assert report.ok, report.summary()
    assert [v.verdict for v in report.verdicts] == ["pass"] * 6
    assert "2 writers (processes), 40 acknowledged puts" in report.verdict("two_writers").reason


def test_ledger_store_in_memory_passes_with_writers_in_threads() -> None:
    report = check_store(LedgerStore.from_url, "memory://check", mode="threads",
                         **SMALL)
    assert report.ok and report.store == "LedgerStore", report.summary()
    assert report.summary().startswith("store check of LedgerStore: ok (6 clauses in ")


def test_ledger_store_at_its_default_size_limit_keeps_a_mebibyte() -> None:
    # 1 MiB of JSON is an entry over the default max_message_bytes: stored in parts.
    report = check_store(LedgerStore.from_url, "memory://small", mode="threads",
                         clauses=["large_values"])
    assert report.ok, report.summary()
    assert report.verdict("large_values").reason.startswith("a value of 1,048,576 bytes")


def test_in_memory_store_lists_a_namespace_a_get_named_and_has_no_ttl() -> None:
    report = check_store(lambda target: InMemoryStore(), mode="threads", **SMALL)
    assert [v.clause for v in report.failed] == ["namespaces"], report.summary()
    assert report.verdict("namespaces").reason == (
        "list_namespaces lists ('namespaces', 'never put'), which only a get and a search named")
    expiry = report.verdict("expiry")
    assert expiry.verdict == "n/a" and "supports_ttl is False" in expiry.reason
    assert expiry.ok and "n/a" in report.summary()


@pytest.mark.parametrize(("flaw", "clause", "reason"), [
    ("ignores_ttl", "expiry", "an item put with a TTL of 0.5 s (key 'short') returned 2 s "
                              "later by get of key 'short' in ('expiry', 'gone'), get of key "
                              "'short' in ('expiry', 'kept'), search"),
    ("joined_namespaces", "namespaces", "search ('namespaces', 'a') gave extra"),
    ("merging_puts", "two_writers", "torn or foreign value"),
    ("first_write_wins", "two_writers", "older than its last acknowledged put"),
    ("appending_puts", "retried_put", "after a put retried with the same value, search listed"),
    ("limit_before_filter", "filter_then_limit", "search(filter, limit=4) gave ['i03']"),
    ("truncating", "large_values", "get gave text of 65536 characters"),
])
def test_each_clause_fails_on_a_store_that_breaks_it(flaw: str, clause: str,
                                                     reason: str) -> None:
    report = check_store(lambda target: FlawedStore(flaw), mode="threads",
                         clauses=[clause], **SMALL)
    verdict = report.verdict(clause)
    assert verdict.verdict == "fail" and reason in verdict.reason, verdict
    assert report.summary().startswith(f"store check of FlawedStore: NOT OK: {clause} failed")


def test_a_store_whose_put_takes_a_label_no_read_can_reach_fails() -> None:
    report = check_store(lambda target: FlawedStore("accepts_dots"), mode="threads",
                         clauses=["namespaces"])
    assert report.verdict("namespaces").reason == (
        "put took the label 'a.b', which BaseStore's reads refuse; put took the label "
        "'a\\x00b', which BaseStore's reads refuse")


def test_acknowledged_puts_that_vanish_are_lost_writes() -> None:
    report = check_store(lambda target: FlawedStore("loses_puts"), mode="threads",
                         clauses=["two_writers"], puts=20)
    reason = report.verdict("two_writers").reason
    assert not report.ok and "acknowledged put" in reason and "is gone" in reason


def test_writers_stopped_by_errors_keep_what_was_acknowledged() -> None:
    report = check_store(lambda target: FlawedStore("full_after_20"), mode="threads",
                         clauses=["two_writers"], puts=50)
    verdict = report.verdict("two_writers")
    assert verdict.verdict == "pass", verdict
    assert "2 writer(s) stopped by an error, acknowledged puts kept" in verdict.reason


def test_a_store_that_keeps_nothing_fails_every_clause_it_can() -> None:
    report = check_store(lambda target: FlawedStore("amnesiac"), mode="threads", **SMALL)
    assert [v.verdict for v in report.verdicts] == ["fail"] * 6
    reasons = {v.clause: v.reason for v in report.verdicts}
    assert "gave nothing" in reasons["namespaces"] and "and " in reasons["namespaces"]
    assert reasons["expiry"] == "search of ('expiry', 'kept') gave [], not the two live items"
    assert "writer 0's acknowledged put 0 is gone" in reasons["two_writers"]
    assert "get gave nothing" in reasons["retried_put"]
    assert reasons["filter_then_limit"].startswith("search(filter, limit=4) gave []")
    assert reasons["large_values"] == "get gave None; search listed it 0 times"


def test_a_writer_that_cannot_open_its_store_fails_the_clause() -> None:
    report = check_store("tests.langgraph._flawed_store:only_here", "nowhere",
                         clauses=["two_writers"], timeout=60)
    verdict = report.verdict("two_writers")
    assert verdict.verdict == "fail"
    assert "a writer did not write" in verdict.reason and "no store here" in verdict.reason


def test_a_clause_that_raises_fails_with_the_exception() -> None:
    report = check_store(lambda target: FlawedStore("raising"), mode="threads",
                         clauses=["retried_put"])
    assert report.verdict("retried_put").reason == "raised RuntimeError: disk full"


def test_a_factory_spawned_writers_cannot_receive_is_refused_at_once() -> None:
    with pytest.raises(TypeError, match="the factory does not pickle"):
        check_store(lambda target: InMemoryStore())


def test_a_factory_that_gives_no_store_is_refused() -> None:
    with pytest.raises(TypeError, match="not a langgraph BaseStore"):
        check_store(lambda target: object(), mode="threads")


@pytest.mark.parametrize(("options", "message"), [
    ({"clauses": ["speed"]}, "clauses must be some of"),
    ({"clauses": []}, "clauses must be some of"),
    ({"writers": 1}, "writers must be at least 2"),
    ({"puts": 0}, "puts at least 1"),
    ({"ttl_seconds": 0}, "must be positive"),
    ({"timeout": -1}, "must be positive"),
    ({"large_value_bytes": 0}, "large_value_bytes must be positive"),
    ({"mode": "thread"}, "mode must be 'processes' or 'threads', not 'thread'"),
])
def test_bad_arguments_are_refused_before_anything_runs(options: dict[str, object],
                                                        message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_store(lambda target: InMemoryStore(), **options)


def test_the_report_names_what_was_run() -> None:
    report = StoreReport("S", (ClauseVerdict("expiry", "pass", "fine", 1.0),), 1.0)
    assert str(report) == ("store check of S: ok (1 clauses in 1.0 s)\n"
                           "  expiry             pass  fine")
    with pytest.raises(KeyError, match="clause 'namespaces' was not run; ran \\['expiry'\\]"):
        report.verdict("namespaces")


def test_the_large_value_is_the_size_asked() -> None:
    for size in (1 << 20, 5000):
        value = large_value(size)
        assert len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()) == size


def test_the_clauses_run_in_the_callers_thread(tmp_path: Path) -> None:
    # A store whose connection belongs to the thread that made it (sqlite3's default):
    # clauses run anywhere else fail on every call.
    import sqlite3

    from langgraph.store.sqlite import SqliteStore

    def made_here(target: str) -> SqliteStore:
        return SqliteStore(sqlite3.connect(tmp_path / "store.db", isolation_level=None))

    report = check_store(made_here, mode="threads",
                         clauses=["namespaces", "retried_put", "filter_then_limit"])
    assert report.ok, report.summary()
