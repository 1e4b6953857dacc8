"""The examples of the README and of every docs page run as written.

Every ```python block of README.md and docs/*.md is a test here, except the
blocks that define pytest tests (``def test_``): those run under pytest with
the plugin, in tests/plugin/test_docs.py. An example that cannot run here (it
needs a server of yours) is fenced as ```text or ```bash, never skipped.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import langchain_classic  # noqa: F401 -- see below
import langchain_core  # noqa: F401 -- see below
import pytest

# LangChain turns its deprecation warnings back on when it is first imported
# (langchain_core and langchain_classic call surface_langchain_deprecation_warnings,
# which puts its filter first). Imported here, before any test, they let the
# ini's filter for the one expected warning (pyproject.toml) come first.

ROOT = Path(__file__).parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def python_blocks(page: Path) -> list[str]:
    """The page's ```python blocks, in order."""
    return re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)


def is_pytest_module(code: str) -> bool:
    return re.search(r"^def test_", code, re.M) is not None


EXAMPLES = [
    pytest.param(code, id=f"{page.relative_to(ROOT)}-{index}",
                 # a program that spawns processes: slow like the other multi-process tests
                 marks=[pytest.mark.slow] if '__name__ == "__main__"' in code else [])
    for page in PAGES
    for index, code in enumerate(python_blocks(page))
    if not is_pytest_module(code)
]


def test_the_pages_have_examples() -> None:
    assert len(python_blocks(ROOT / "README.md")) >= 1
    for name in ("getting-started", "concepts", "langchain", "langgraph", "testing"):
        assert python_blocks(ROOT / "docs" / f"{name}.md"), name


def test_the_langgraph_page_runs_a_whole_graph_an_interrupt_and_time_travel() -> None:
    """What a LangGraph user looks for first is an example that runs, not a sketch."""
    examples = "\n".join(python_blocks(ROOT / "docs" / "langgraph.md"))
    for shown in ("StateGraph(", 'LedgerSaver.from_url("sqlite:///', "interrupt(",
                  "Command(resume=", "get_state_history(", "update_state(",
                  "graph.invoke(None, "):
        assert shown in examples, shown


def test_no_python_block_is_fenced_another_way() -> None:
    """```py or ```python3 would be highlighted as Python but never run."""
    for page in PAGES:
        fences = re.findall(r"^```(\S+)", page.read_text(encoding="utf-8"), re.M)
        assert not {"py", "python3", "py3", "Python"} & set(fences), page


@pytest.mark.parametrize("code", EXAMPLES)
def test_each_python_example_runs(code: str, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the examples write ./chatledger.db and other files
    if '__name__ == "__main__"' in code:  # a program that spawns processes: run as a script
        script = tmp_path / "example.py"
        script.write_text(code, encoding="utf-8")
        done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, timeout=120,
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return
    namespace: dict[str, object] = {"__name__": "docs_example"}
    if "asyncio.run(" in code:  # a whole program: it runs as pasted, nothing imported for it
        # dont_inherit: not this module's `from __future__ import annotations`.
        exec(compile(code, "docs example", "exec", dont_inherit=True), namespace)
        return
    exec("from chatledger import *", namespace)  # what a reader has imported by then
    # dont_inherit: a pasted example's annotations are evaluated (a TypedDict state's are
    # read by LangGraph), not strings left by this module's `from __future__` import.
    if "await " in code:
        code = "async def example():\n" + textwrap.indent(code, "    ")
        exec(compile(code, "docs example", "exec", dont_inherit=True), namespace)
        asyncio.run(namespace["example"]())  # type: ignore[operator]
    else:
        exec(compile(code, "docs example", "exec", dont_inherit=True), namespace)
    assert (tmp_path / "chatledger.db").exists() or "open_store" not in code
