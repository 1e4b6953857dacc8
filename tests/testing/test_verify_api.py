"""verify_deployment: the verify run as a Python call (the CLI's tests cover its faults)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chatledger import open_store
from chatledger.testing import ConcurrentRun, Verification, check_history, verify_deployment
from chatledger.testing import _verify as verify_module


def test_a_run_on_sqlite_is_clean_names_its_seed_and_purges(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/bot.db"
    outcome = verify_deployment(url, namespace="bot", processes=2, duration=1.0, seed=11)
    assert outcome.ok and outcome.run.errors == () and outcome.seed == 11
    assert str(outcome).startswith("ok: every acknowledged append was kept")
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


@pytest.mark.slow
def test_a_script_without_the_main_guard_fails_and_the_assertion_says_why(
        tmp_path: Path) -> None:
    """docs/operations.md's example pasted without `if __name__ == "__main__":`: each
    spawned worker imports the script, whose run cannot start processes while it is being
    imported, so every worker exits before it reports."""
    script = tmp_path / "verify_unguarded.py"
    script.write_text(textwrap.dedent("""
        from chatledger.testing import verify_deployment

        outcome = verify_deployment("sqlite:///chatledger.db", processes=2, duration=1.0,
                                    seed=5)
        assert outcome.ok, outcome
    """), encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    message = done.stderr[done.stderr.index("AssertionError: "):].splitlines()
    assert message[:3] == [
        "AssertionError: FAILED: 2 worker(s) stopped before the end: the run proves nothing",
        "  worker 0: exited with code 1 without reporting",
        "  worker 1: exited with code 1 without reporting"]
    assert 'under `if __name__ == "__main__":`' in message[3]
    assert ("history check: no anomalies, but no append was recorded: nothing was checked"
            in message)
    assert not any(line.startswith(("ok", "history check: ok")) for line in message)


def test_a_worker_that_raises_leads_the_text_with_its_error_and_traceback(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object) -> None:
        raise RuntimeError("no conversation for you")

    monkeypatch.setattr(verify_module._Conversations, "session", broken)
    outcome = verify_deployment("memory://", processes=2, duration=0.2)
    assert not outcome.ok
    lines = str(outcome).splitlines()
    assert lines[:2] == ["FAILED: 2 worker(s) stopped before the end: the run proves nothing",
                         "  worker 0: RuntimeError: no conversation for you"]
    assert "  Traceback (most recent call last):" in lines
    assert "if __name__" not in str(outcome)  # each worker said why: no guessing
    assert outcome.describe()[-1] == lines[0]  # the CLI's last line


def test_a_run_that_acknowledged_no_append_is_not_ok() -> None:
    report = check_history([], {})
    assert report.ok  # no anomaly in an empty history, but nothing was checked: it says so
    assert str(report).startswith("history check: no anomalies, but no append was recorded")
    outcome = Verification("memory://x", "default-verify-x", 1, 2, 1.0, "faults=False", (), 0,
                           ConcurrentRun((), (), 2), report, kept=False)
    assert not outcome.ok
    assert str(outcome).startswith(
        "FAILED: no append was acknowledged in 0 attempted: the run proves nothing\n")
