"""``chatledger export`` / ``import`` carry LedgerStore items: each item is a
session under ``lgs/``, so its value, times, expiry, TTL and embeddings travel
in its entries."""

from __future__ import annotations

import io
from pathlib import Path

from click.testing import CliRunner

from chatledger import open_store, user
from chatledger._cli import main
from chatledger.langgraph import LedgerStore
from chatledger.transfer import export_sessions, import_sessions
from tests.conftest import FakeClock


def _embed(texts: list[str]) -> list[list[float]]:
    return [[float(t.count(c)) for c in "abcd"] for t in texts]


INDEX = {"dims": 4, "embed": _embed, "fields": ["text"]}


def test_items_round_trip_with_ttl_times_and_embeddings(tmp_path: Path) -> None:
    clock = FakeClock()
    with LedgerStore(open_store(f"sqlite:///{tmp_path}/a.db", clock=clock), owns_store=True,
                     index=INDEX) as source:  # type: ignore[arg-type]
        source.put(("users", "u1", "notes"), "as", {"text": "aaaa"}, ttl=60.0)
        source.put(("users", "u1", "notes"), "ds", {"text": "dddd"})
        source.put(("a:b",), "k", {"text": "b"})
        out = io.StringIO()
        report = export_sessions(source.store, out, prefix="lgs/")
        assert report.sessions == 3
        before = source._read_item(("users", "u1", "notes"), "as")
    (tmp_path / "items.jsonl").write_text(out.getvalue(), encoding="utf-8")
    with LedgerStore(open_store("memory://", clock=clock), owns_store=True,
                     index=INDEX) as copy:  # type: ignore[arg-type]
        imported = import_sessions(copy.store, tmp_path / "items.jsonl")
        assert imported.added == 3 and not imported.refused
        after = copy._read_item(("users", "u1", "notes"), "as")
        assert before is not None and after is not None and after.item == before.item
        assert after.item.ttl == 60.0 and after.item.expires == clock() + 3600
        assert [i.key for i in copy.search(("users",), query="dd")] == ["ds", "as"]
        assert copy.get(("a:b",), "k").value == {"text": "b"}  # type: ignore[union-attr]
        assert sorted(copy.list_namespaces()) == [("a:b",), ("users", "u1", "notes")]


def test_the_commands_export_only_the_items_with_their_prefix(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/a.db"
    with LedgerStore.from_url(url) as store:
        store.put(("prefs",), "food", {"likes": "pizza"})
        store.store.session("chat-1").append([user("a chat, not an item")])
    exported = CliRunner().invoke(main, ["export", "--url", url, "--prefix", "lgs/",
                                         "--out", str(tmp_path / "items.jsonl")])
    assert exported.exit_code == 0, exported.output
    lines = (tmp_path / "items.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and '"session":"lgs/prefs/=food"' in lines[0]
    target = f"sqlite:///{tmp_path}/b.db"
    imported = CliRunner().invoke(main, ["import", "--url", target,
                                         str(tmp_path / "items.jsonl")])
    assert imported.exit_code == 0, imported.output
    with LedgerStore.from_url(target) as copy:
        assert copy.get(("prefs",), "food").value == {"likes": "pizza"}  # type: ignore[union-attr]
