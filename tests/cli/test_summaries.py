"""Sessions that hold summary entries travel and show like any other."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from chatledger import open_store, summary_through, user
from chatledger._cli import main


def test_summaries_are_exported_imported_and_shown(tmp_path: Path) -> None:
    source, copy = f"sqlite:///{tmp_path}/a.db", f"sqlite:///{tmp_path}/b.db"
    with open_store(source) as store:
        session = store.session("s")
        session.append([user(f"fact {n}") for n in range(12)])
        assert session.maybe_compact(lambda ms: "facts 0 to 7", trigger_tokens=40,
                                     keep_tokens=20) is not None
        before = session.read(with_summary=True)
    exported = CliRunner().invoke(main, ["export", "--url", source])
    assert exported.exit_code == 0, exported.output
    imported = CliRunner().invoke(main, ["import", "--url", copy], input=exported.stdout)
    assert imported.exit_code == 0, imported.output
    with open_store(copy) as store:
        after = store.session("s").read(with_summary=True)
    assert after.summary == before.summary and after.messages == before.messages
    assert after.summary is not None and summary_through(after.summary) == 9
    shown = CliRunner().invoke(main, ["show", "s", "--url", copy]).stdout
    assert "[summary of seqs up to 9]" in shown and "facts 0 to 7" in shown
