"""A backend is one folder: what docs/development.md ("A new backend") promises, checked.

Each built-in backend's modules are in its own folder under ``_backends/``; what
is shared by all of them is a short, fixed list beside the folders; no backend
imports another's modules, nor does a shared one; and outside ``_backends/``
only the named bridges into one backend's modules exist (the DynamoDB client
that the CLI and the LangChain migration use).
"""

from __future__ import annotations

from chatledger._backends.registry import BUILTIN
from tests.unit.test_layers import PACKAGE, _graph

BACKENDS = PACKAGE / "_backends"
PREFIX = "chatledger._backends."

SHARED = frozenset({"__init__", "contract", "migrations", "provisioning", "registry",
                    "threaded", "turns", "vectors", "_async", "_sync"})
"""What ``_backends/`` holds beside the backends' folders: the contract and what
every backend uses (``_async/`` and ``_sync/`` hold the base classes alone)."""

BRIDGES = frozenset({
    ("chatledger._cli.migrate", "chatledger._backends.dynamodb.io"),
    ("chatledger.langchain._migrate_dynamodb", "chatledger._backends.dynamodb.io"),
})
"""Imports of one backend's modules from outside ``_backends/``: each deliberate."""


def _folder(module: str) -> str | None:
    """The backend folder ``module`` is in (``chatledger._backends.sqlite.backend``:
    ``sqlite``); None for a module that is not in one."""
    if not module.startswith(PREFIX):
        return None
    top = module[len(PREFIX):].partition(".")[0]
    return None if top in SHARED else top


def _folders() -> set[str]:
    return {path.name for path in BACKENDS.iterdir()
            if path.is_dir() and path.name not in SHARED and (path / "__init__.py").exists()}


def test_each_built_in_backend_is_one_folder() -> None:
    folders = _folders()
    assert {"memory", "sqlite", "postgres", "redis", "dynamodb"} <= folders
    for scheme, builtin in BUILTIN.items():
        assert len({_folder(module) for module in builtin.modules}) == 1, scheme
        assert {_folder(module) for module in builtin.modules} <= folders, scheme
    assert {_folder(m) for builtin in BUILTIN.values() for m in builtin.modules} == folders


def test_nothing_but_the_shared_modules_lives_beside_the_folders() -> None:
    beside = {path.stem for path in BACKENDS.iterdir()
              if path.suffix == ".py" or (path.is_dir() and path.name != "__pycache__")}
    assert beside - _folders() == SHARED
    for twin in ("_async", "_sync"):
        assert {path.stem for path in (BACKENDS / twin).glob("*.py")} == {
            "__init__", "base", "transactional"}


def test_no_module_reaches_into_a_backend_folder_but_its_own() -> None:
    graph = _graph()
    crossing = {(module, target) for module, targets in graph.items() for target in targets
                if _folder(target) is not None and _folder(module) != _folder(target)}
    assert crossing == BRIDGES


def test_the_check_sees_a_backend_reaching_into_another() -> None:
    assert _folder("chatledger._backends.postgres.sql") == "postgres"
    assert _folder("chatledger._backends.contract") is None
    assert _folder("chatledger._backends._async.base") is None
    assert _folder("chatledger._core") is None
    slips = [("chatledger._backends.sqlite.backend", "chatledger._backends.postgres.sql"),
             ("chatledger._backends.registry", "chatledger._backends.memory.state")]
    for module, target in slips:
        assert _folder(target) is not None and _folder(module) != _folder(target)
    assert _folder("chatledger._backends.dynamodb._sync.table") == _folder(
        "chatledger._backends.dynamodb.layout")
