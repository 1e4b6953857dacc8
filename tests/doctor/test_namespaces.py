"""Which namespace doctor looks at: its checks of stored data read the namespace users
store in (``--namespace``, the URL's, else the store's default); its round trip writes
in a scratch namespace unless one is named (a user may be allowed no other)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import chatledger._doctor as doctor
from chatledger import BackendUnavailable, Store, open_store, user
from chatledger._cli import main
from chatledger._doctor import SCRATCH, diagnose
from chatledger.langgraph import LedgerStore


def _damaged_item_in_default_namespace(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/a.db"
    with LedgerStore.from_url(url) as store:
        store.put(("notes",), "n1", {"text": "fine"})
    with open_store(url) as raw:
        raw.session("lgs/notes/=n2").append([user("not an item")])
    return url


def test_without_a_namespace_the_default_ones_items_are_checked(tmp_path: Path) -> None:
    url = _damaged_item_in_default_namespace(tmp_path)
    result = CliRunner().invoke(main, ["doctor", url])
    assert result.exit_code == 1, result.output
    assert ("FAIL  store items  1 of 2 LangGraph store item(s) cannot be read: "
            "namespace ('notes',) key 'n2'") in result.output
    other = CliRunner().invoke(main, ["doctor", url, "--namespace", "elsewhere"])
    assert other.exit_code == 0 and "store items" not in other.output
    with sqlite3.connect(tmp_path / "a.db") as db:  # the round trips left nothing behind
        assert db.execute("SELECT count(*) FROM sessions WHERE sid LIKE 'doctor-%'"
                          ).fetchone() == (0,)


def test_the_round_trip_writes_in_the_scratch_namespace_unless_one_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    real = doctor._round_trip

    def round_trip(store: Store) -> Any:
        seen.append(store.namespace)
        return real(store)

    monkeypatch.setattr(doctor, "_round_trip", round_trip)
    url = f"sqlite:///{tmp_path}/a.db"
    for report in (diagnose(url), diagnose(url, namespace="bot"),
                   diagnose(f"{url}?namespace=web")):
        assert not report.failed, report.checks
    assert seen == [SCRATCH, "bot", "web"]


def test_a_scratch_store_that_does_not_open_fails_the_round_trip(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = doctor.open_store

    def opened(url: str, **options: Any) -> Store:
        if options.get("namespace") == SCRATCH:
            raise BackendUnavailable("the scratch namespace is out of reach")
        return real(url, **options)

    monkeypatch.setattr(doctor, "open_store", opened)
    checks = {c.name: c for c in diagnose(f"sqlite:///{tmp_path}/a.db").checks}
    assert (checks["round trip"].status, checks["round trip"].detail) == (
        "fail", "BackendUnavailable: the scratch namespace is out of reach")
