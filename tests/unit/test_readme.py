"""The README's examples run as written: documentation that cannot rot."""

from __future__ import annotations

import asyncio
import re
import textwrap
from pathlib import Path

import pytest

README = Path(__file__).parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)


def test_the_readme_has_examples() -> None:
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_each_python_example_runs(index: int, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the examples write ./chatledger.db
    namespace: dict[str, object] = {"__name__": "readme_example"}
    code = BLOCKS[index]
    if "asyncio.run(" in code:  # a whole program: it runs as pasted, nothing imported for it
        # dont_inherit: not this module's `from __future__ import annotations`.
        exec(compile(code, f"README example {index}", "exec", dont_inherit=True), namespace)
        return
    exec("from chatledger import *", namespace)  # what a reader has imported by then
    if "await " in code:
        code = "async def example():\n" + textwrap.indent(code, "    ")
        exec(compile(code, f"README example {index}", "exec"), namespace)
        asyncio.run(namespace["example"]())  # type: ignore[operator]
    else:
        exec(compile(code, f"README example {index}", "exec"), namespace)
    assert (tmp_path / "chatledger.db").exists() or "open_store" not in code
