"""The layers stay layers: backends never reach up, and their schemes are listed once."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from chatledger._backends import known_schemes
from chatledger._backends.registry import BUILTIN, Registered, builtin_schemes

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "chatledger"

# What is built on the backends: the store (sync and async), the packages that
# use the store, and the package's root, which imports the store.
ABOVE_BACKENDS = ("chatledger._async", "chatledger._sync", "chatledger._cli",
                  "chatledger._doctor", "chatledger._inspector", "chatledger.langchain",
                  "chatledger.langgraph", "chatledger.testing", "chatledger.__main__")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path) -> list[str]:
    """Every module an import statement of ``path`` may load, as absolute names."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from chatledger import x`: x is a module or a name of the root package
            names += [base, *(f"{base}.{alias.name}" for alias in node.names)]
    return names


def _reaches_up(name: str) -> bool:
    if name.startswith(ABOVE_BACKENDS):
        return True
    # A name of the root package that is no module of it comes from the store's API.
    head, _, tail = name.partition("chatledger.")
    return not head and "." not in tail and not (
        (PACKAGE / f"{tail}.py").exists() or (PACKAGE / tail).is_dir())


def test_no_backend_module_imports_the_layers_above_it() -> None:
    sources = sorted((PACKAGE / "_backends").rglob("*.py"))
    assert len(sources) > 20
    upward = {f"{path.relative_to(PACKAGE)}: {name}"
              for path in sources for name in _imported(path) if _reaches_up(name)}
    assert not upward


def test_the_import_walk_sees_an_upward_import(tmp_path: Path) -> None:
    """The check above would catch the slip it is there for."""
    assert _reaches_up("chatledger._sync.retry") and _reaches_up("chatledger.open_store")
    assert not _reaches_up("chatledger._errors") and not _reaches_up("chatledger._backends.sqlite")
    sqlite = PACKAGE / "_backends" / "sqlite.py"
    assert "chatledger._backends.registry" in _imported(sqlite)
    assert "chatledger._errors.ConfigError" in _imported(sqlite)


def test_built_in_schemes_are_listed_once() -> None:
    """Each built-in class serves exactly the schemes BUILTIN gives its module."""
    for builtin in BUILTIN.values():
        for module in builtin.modules:
            importlib.import_module(module)
    classes = {cls for cls in Registered.registry.values() if cls.__module__.startswith(
        "chatledger._backends.")}
    assert {cls.__module__ for cls in classes} == {
        module for builtin in BUILTIN.values() for module in builtin.modules}
    for cls in classes:
        assert cls.__dict__["schemes"] == builtin_schemes(cls.__module__)
    served = {scheme for scheme, _ in Registered.registry if scheme in BUILTIN}
    assert served == set(BUILTIN) and set(BUILTIN) <= set(known_schemes())


@pytest.mark.parametrize("scheme", sorted(BUILTIN))
def test_each_built_in_scheme_has_a_sync_class_and_an_async_one_or_threads(scheme: str) -> None:
    for module in BUILTIN[scheme].modules:
        importlib.import_module(module)
    assert (scheme, False) in Registered.registry
    # Only SQLite, whose driver is sync, is served to async callers in threads.
    assert ((scheme, True) in Registered.registry) == (scheme != "sqlite")


def test_a_backend_is_async_by_what_it_is_not_by_its_name() -> None:
    class AsyncBackend(Registered):  # named like the async base, but sync
        def append(self) -> None:
            """A sync operation."""

    class Misnamed(AsyncBackend):
        schemes = ("misnamed-layers-test",)

    class Plain(Registered):
        schemes = ("plain-layers-test",)

        async def append(self) -> None:
            """An async operation."""

    try:
        assert Registered.registry["misnamed-layers-test", False] is Misnamed
        assert Registered.registry["plain-layers-test", True] is Plain
    finally:
        del Registered.registry["misnamed-layers-test", False]
        del Registered.registry["plain-layers-test", True]


def test_the_cluster_backend_holds_nodes_rather_than_inheriting_a_constructor_it_skips() -> None:
    from chatledger._backends.redis import (
        AsyncClusterBackend,
        AsyncRedisBackend,
        ClusterBackend,
        RedisBackend,
    )

    assert not issubclass(AsyncClusterBackend, AsyncRedisBackend)
    assert not issubclass(ClusterBackend, RedisBackend)
