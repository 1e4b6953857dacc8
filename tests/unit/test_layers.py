"""The layers stay layers: every import points down, none closes a circle, and the
backends' schemes are listed once.

The layers, from the bottom: the foundations (every top-level private module not
named below: values, rules, words, the migration-free parts a store is made
of); the backends; the store's parts; the store; what is built on the store;
the tools built on those; the command line. A module may import its own layer
and those below it, never one above, and no chain of imports may come back to
where it started (the imports inside functions and under TYPE_CHECKING count:
they are arrows of the design too).
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path

import pytest

from chatledger._backends import known_schemes
from chatledger._backends.registry import BUILTIN, Registered, builtin_schemes

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "chatledger"

LAYERS: tuple[tuple[str, ...], ...] = (
    (),  # the foundations: every module not named in a layer above
    ("chatledger._backends",),
    ("chatledger._core", "chatledger._places", "chatledger._telemetry"),
    ("chatledger._async", "chatledger._sync", "chatledger._turn_cost", "chatledger"),
    ("chatledger.langchain", "chatledger.langgraph", "chatledger.transfer",
     "chatledger._doctor"),
    ("chatledger.testing", "chatledger._inspector"),
    ("chatledger._cli", "chatledger.__main__"),
)
"""Packages and modules by layer, bottom first; ``chatledger`` is the root module alone."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> frozenset[str]:
    return frozenset(_module_name(path) for path in PACKAGE.rglob("*.py"))


def _resolved(name: str, modules: frozenset[str]) -> str | None:
    """The module an imported name lives in (``chatledger._errors.ConfigError``:
    ``chatledger._errors``); None for a name outside chatledger."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported(path: Path, modules: frozenset[str]) -> set[str]:
    """Every chatledger module an import statement of ``path`` loads, wherever it is."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from chatledger import x`: x is a module, or a name of the root module
            names += [f"{base}.{alias.name}" for alias in node.names]
    found = {_resolved(name, modules) for name in names if name.startswith("chatledger")}
    return {name for name in found if name is not None and name != module}


@cache
def _graph() -> Mapping[str, frozenset[str]]:
    modules = _modules()
    return {_module_name(path): frozenset(_imported(path, modules))
            for path in PACKAGE.rglob("*.py")}


def _layer(module: str) -> int:
    for index, names in reversed(list(enumerate(LAYERS))):
        for name in names:
            if module == name or (name != "chatledger" and module.startswith(f"{name}.")):
                return index
    return 0


def _upward(graph: Mapping[str, frozenset[str]]) -> set[str]:
    return {f"{module} -> {target}" for module, targets in graph.items()
            for target in targets if _layer(target) > _layer(module)}


def _cycle(graph: Mapping[str, frozenset[str]]) -> list[str]:
    """One circle of imports, as the modules along it (empty: there is none)."""
    done: set[str] = set()

    def walk(module: str, path: list[str]) -> Iterator[list[str]]:
        if module in path:
            yield [*path[path.index(module):], module]
            return
        if module in done:
            return
        for target in sorted(graph.get(module, ())):
            yield from walk(target, [*path, module])
        done.add(module)

    for start in sorted(graph):
        for circle in walk(start, []):
            return circle
    return []


def test_no_module_imports_a_layer_above_its_own() -> None:
    graph = _graph()
    assert len(graph) > 200 and sum(map(len, graph.values())) > 800
    assert not _upward(graph)


def test_no_imports_go_round_in_a_circle() -> None:
    assert _cycle(_graph()) == []


def test_the_checks_would_catch_the_slips_they_are_there_for() -> None:
    """An upward import and a circle are seen, wherever the import statement is."""
    assert _layer("chatledger._backends.sqlite.backend") == 1 and _layer("chatledger._errors") == 0
    assert _layer("chatledger") == 3 and _layer("chatledger._cli.main") == 6
    assert _upward({"chatledger._backends.sqlite.backend": frozenset({"chatledger"})})
    assert _upward({"chatledger._context": frozenset({"chatledger.langchain._history"})})
    assert not _upward({"chatledger._sync.store": frozenset({"chatledger._backends"})})
    assert _cycle({"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}),
                   "d": frozenset({"a"})}) == ["a", "b", "c", "a"]
    assert _cycle({"a": frozenset({"b"}), "b": frozenset(), "c": frozenset({"a", "b"})}) == []
    modules = _modules()
    sealing = _imported(PACKAGE / "_async" / "sealing.py", modules)
    assert {"chatledger._backends.contract", "chatledger._async.handles"} <= sealing
    assert _imported(PACKAGE / "__init__.py", modules) >= {"chatledger._version"}


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
