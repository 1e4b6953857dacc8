"""verify_deployment: the verify run as a Python call (the CLI's tests cover its faults)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chatledger import open_store
from chatledger.testing import verify_deployment


def test_a_run_on_sqlite_is_clean_names_its_seed_and_purges(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/bot.db"
    outcome = verify_deployment(url, namespace="bot", processes=2, duration=1.0, seed=11)
    assert outcome.ok and outcome.run.errors == () and outcome.seed == 11
    assert outcome.why_not_proxied == "SQLite is a file, with no network in between"
    assert outcome.faults == () and outcome.faults_hit == 0 and outcome.purge_error is None
    assert outcome.namespace.startswith("bot-verify-")
    assert outcome.report.figures.appends_acknowledged > 0
    with open_store(url, namespace=outcome.namespace) as store:
        assert list(store.sessions()) == []  # purged at the end


def test_faults_false_says_so_and_keep_keeps() -> None:
    outcome = verify_deployment("memory://", processes=2, duration=0.5, faults=False, keep=True)
    assert outcome.ok and outcome.why_not_proxied == "faults=False" and outcome.kept


@pytest.mark.parametrize(("processes", "duration"), [(0, 1.0), (65, 1.0), (2, 0.0), (2, 601.0)])
def test_out_of_range_runs_are_refused(processes: int, duration: float) -> None:
    with pytest.raises(ValueError, match="processes must be 1 to 64 and duration 0 to 600 s"):
        verify_deployment("memory://", processes=processes, duration=duration)
