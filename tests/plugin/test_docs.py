"""The docs' pytest examples are real tests, run as a user would: every ```python
block of docs/*.md that defines a test passes under pytest with the plugin (a pytest
run of its own, in this process: tests/plugin/test_plugin.py proves the new-interpreter
run once)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "testing.md"


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)


TEST_MODULES = [
    pytest.param(code, id=f"{page.name}-{index}")
    for page in sorted((ROOT / "docs").glob("*.md"))
    for index, code in enumerate(python_blocks(page))
    if re.search(r"^def test_", code, re.M)
]


def test_the_first_example_is_a_fault_test_in_under_ten_lines() -> None:
    example = python_blocks(DOCS)[0]
    assert "def test_an_outage_is_loud_not_amnesia(ledger_store, ledger_faults)" in example
    assert len(example.strip().splitlines()) <= 14


def test_the_docs_have_test_examples() -> None:
    assert len(TEST_MODULES) >= 4


@pytest.mark.slow
@pytest.mark.parametrize("example", TEST_MODULES)
def test_each_test_example_of_the_docs_passes(example: str, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_docs_example=example)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-v")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 1, result.stdout.str()
    assert set(outcomes) <= {"passed", "warnings"}, result.stdout.str()


def test_the_docs_start_by_installing_from_a_checkout_with_pytest() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    opening = DOCS.read_text(encoding="utf-8").split("\n## ", 1)[0]
    assert 'pip install -e ".[testing,redis,langchain]"' in opening
    assert "checkout" in opening and "not on a package index" in opening
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["optional-dependencies"]["testing"] == ["pytest>=8"]
