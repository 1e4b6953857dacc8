"""docs/testing.md's first example is a real test, run as a user would."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


@pytest.mark.slow
def test_the_ten_line_fault_test_of_the_docs_passes(pytester: pytest.Pytester) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.DOTALL)
    example = blocks[0]
    assert "def test_" in example and len(example.strip().splitlines()) <= 14
    pytester.makepyfile(test_docs_example=example)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_an_outage_is_loud_not_amnesia?redis-faults? PASSED*"])


@pytest.mark.slow
def test_the_faults_example_of_the_docs_passes(pytester: pytest.Pytester) -> None:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Faults, one example each", 1)[1]
    example = re.findall(r"```python\n(.*?)```", section, re.DOTALL)[0]
    pytester.makepyfile(test_docs_faults=example)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1)


def test_the_docs_start_by_installing_from_a_checkout_with_pytest() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    opening = DOCS.read_text(encoding="utf-8").split("\n## ", 1)[0]
    assert 'pip install -e ".[testing,redis,langchain]"' in opening
    assert "checkout" in opening and "not on a package index" in opening
    pyproject = tomllib.loads((DOCS.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["optional-dependencies"]["testing"] == ["pytest>=8"]
