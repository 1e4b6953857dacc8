"""The benchmarks' header refuses a busy machine: figures taken there are noise."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _report() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_report", BENCHMARKS / "_report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_quiet_machine_gets_its_load_in_the_header() -> None:
    report = _report()
    quiet = report.load_limit() - 0.5
    assert report.checked_load((quiet, 9.0, 9.0)) == f"{quiet:.2f} 9.00 9.00"


def test_a_busy_machine_gets_no_figures(capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    report = _report()
    monkeypatch.delenv(report.ALLOW_LOAD, raising=False)
    busy = report.load_limit() + 1
    with pytest.raises(SystemExit) as exited:
        report.checked_load((busy, 1.0, 1.0))
    assert exited.value.code == report.NOISY_EXIT == 3
    said = capsys.readouterr().err
    assert f"load {busy:.2f} is above {report.load_limit():g} (one per core)" in said
    assert f"{report.ALLOW_LOAD}=1" in said


def test_a_busy_machine_allowed_marks_every_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    report = _report()
    monkeypatch.setenv(report.ALLOW_LOAD, "1")
    busy = report.load_limit() + 1
    fact = report.checked_load((busy, 1.0, 1.0))
    assert fact.splitlines()[0] == f"{busy:.2f} 1.00 1.00"
    assert fact.splitlines()[1].startswith("NOISY: above")
    assert os.cpu_count() is None or report.load_limit() == os.cpu_count()
