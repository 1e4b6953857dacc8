"""``chatledger verify`` on PostgreSQL: workers through a fault proxy, then the history check."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from chatledger._cli import main
from chatledger.testing._fault_schedule import plan


@pytest.mark.slow
def test_verify_injects_faults_between_workers_and_postgres_and_finds_no_anomaly(
    postgres_url: str,
) -> None:
    seed = next(s for s in range(1000) if {f.kind for f in plan(s, 2.0)} >= {"lost replies"})
    result = CliRunner().invoke(main, ["verify", postgres_url, "--duration", "2",
                                       "--processes", "2", "--seed", str(seed), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is True and report["anomalies"] == []
    assert report["faults"]["proxied"] is True and report["faults"]["hit"] > 0
    figures = report["figures"]
    assert figures["appends_acknowledged"] > 0
    assert figures["appends_lost"] == figures["appends_duplicated"] == figures["appends_torn"] == 0
