"""The CLI's modules depend one way: the group on the commands, the commands on the target."""

from __future__ import annotations

import ast
import subprocess
import sys
from graphlib import TopologicalSorter
from pathlib import Path

import pytest

import chatledger._cli

CLI = Path(chatledger._cli.__file__).parent
MODULES = sorted(path.stem for path in CLI.glob("*.py") if path.stem != "__init__")


def _imports(module: str) -> set[str]:
    """The sibling modules ``module`` imports, at its top or inside a function."""
    found: set[str] = set()
    for node in ast.walk(ast.parse((CLI / f"{module}.py").read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            # "from .target import X" names a module; "from . import demo" names several.
            found |= {node.module} if node.module else {alias.name for alias in node.names}
    return found & set(MODULES)


def test_the_cli_modules_import_each_other_without_a_cycle() -> None:
    graph = {module: _imports(module) for module in MODULES}
    order = list(TopologicalSorter(graph).static_order())  # CycleError if there is one
    assert order[-1] == "main"  # the group comes last: it gathers every command
    assert not [module for module, deps in graph.items() if "main" in deps]
    assert graph["main"] >= {"demo", "doctor", "inspect", "operate"}


@pytest.mark.parametrize("module", MODULES)
def test_each_cli_module_imports_in_a_fresh_interpreter(module: str) -> None:
    # import_module, since the package's attribute "main" is the group, not the module;
    # conftest.py points the child's PYTHONPATH at the copy under test.
    code = f"import importlib; print(importlib.import_module('chatledger._cli.{module}').__file__)"
    result = subprocess.run([sys.executable, "-c", code],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(CLI / f"{module}.py")
