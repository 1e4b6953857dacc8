"""``chatledger doctor`` on a namespace holding LangGraph store items (LedgerStore):
each item must read; expired ones are counted; a damaged one fails the check."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from chatledger import BackendUnavailable, open_store, user
from chatledger._cli import main
from chatledger._doctor import diagnose, items
from chatledger.langgraph import LedgerStore
from tests.conftest import FakeClock


def _checks(url: str) -> dict[str, object]:
    return {c.name: c for c in diagnose(url, namespace="bot").checks}


def test_readable_items_pass_and_expired_ones_are_counted(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/a.db"
    an_hour_ago = FakeClock(time.time() - 3600)  # doctor reads on the real clock
    with LedgerStore(open_store(url, namespace="bot", clock=an_hour_ago),
                     owns_store=True) as store:
        store.put(("users", "u1"), "food", {"likes": "pizza"})
        store.put(("users", "u1"), "soon", {"v": 1}, ttl=1.0)
    result = CliRunner().invoke(main, ["doctor", url, "--namespace", "bot"])
    assert result.exit_code == 0, result.output
    assert ("ok    store items  2 LangGraph store item(s), each readable; 1 expired, unswept "
            "(sweep_ttl frees them)") in result.output


def test_a_damaged_item_fails_the_check(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/a.db"
    with LedgerStore.from_url(url, namespace="bot") as store:
        store.put(("notes",), "n1", {"text": "fine"})
    with open_store(url, namespace="bot") as raw:
        raw.session("lgs/notes/=n2").append([user("not an item")])
    check = _checks(url)["store items"]
    assert (check.status, check.value) == ("fail", 1)  # type: ignore[attr-defined]
    assert ("1 of 2 LangGraph store item(s) cannot be read: namespace ('notes',) key 'n2' "
            "(it is no LedgerStore item, seq 1)") in check.detail  # type: ignore[attr-defined]
    assert "lgs/" not in check.detail  # type: ignore[attr-defined]


def test_a_namespace_without_items_has_no_such_check(tmp_path: Path) -> None:
    assert "store items" not in _checks(f"sqlite:///{tmp_path}/a.db")


def test_without_langgraph_the_items_are_named_not_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path}/a.db"
    with open_store(url, namespace="bot") as raw:
        raw.session("lgs/notes/=n1").append([user("x")])
    monkeypatch.setitem(sys.modules, "chatledger.langgraph._item_entries", None)
    check = _checks(url)["store items"]
    assert check.status == "warn"  # type: ignore[attr-defined]
    assert "1 LangGraph store item(s) not checked" in check.detail  # type: ignore[attr-defined]


def test_a_store_that_fails_while_listing_items_fails_the_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def down(store: object) -> None:
        raise BackendUnavailable("the server went away")

    monkeypatch.setattr(items, "store_items", down)
    monkeypatch.setattr("chatledger._doctor.store_items", down)
    check = _checks(f"sqlite:///{tmp_path}/a.db")["store items"]
    assert check.status == "fail"  # type: ignore[attr-defined]
    assert "BackendUnavailable" in check.detail  # type: ignore[attr-defined]


def test_an_item_swept_to_nothing_is_not_counted_as_broken(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/a.db"
    an_hour_ago = FakeClock(time.time() - 3600)
    with LedgerStore(open_store(url, namespace="bot", clock=an_hour_ago),
                     owns_store=True) as store:
        store.put(("n",), "gone", {"v": 1}, ttl=1.0)
        store.put(("n",), "kept", {"v": 2})
    with LedgerStore.from_url(url, namespace="bot") as store:
        assert store.sweep_ttl() == 1
    check = _checks(url)["store items"]
    assert check.status == "ok"  # type: ignore[attr-defined]
    assert check.detail == "1 LangGraph store item(s), each readable"  # type: ignore[attr-defined]


def test_an_item_stored_in_parts_reads_and_one_missing_its_parts_fails(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/a.db"
    with LedgerStore(open_store(url, namespace="bot", max_message_bytes=4096),
                     owns_store=True) as store:
        store.put(("docs",), "big", {"text": "x" * 20_000})
        assert _checks(url)["store items"].status == "ok"  # type: ignore[attr-defined]
        store.store.session("lgs/docs/=big").trim(keep_last=1)  # the parts go, the entry stays
    check = _checks(url)["store items"]
    assert check.status == "fail"  # type: ignore[attr-defined]
    assert "a part of the item's value is missing" in check.detail  # type: ignore[attr-defined]
