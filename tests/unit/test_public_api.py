"""The public API is drawn: five public modules, each name importable one way.

Everything else is underscored (a module, or a package whose name starts with
``_``), so that what a user may rely on is exactly what these modules export.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

import chatledger

PUBLIC = ("chatledger", "chatledger.langchain", "chatledger.langgraph", "chatledger.testing",
          "chatledger.transfer")
PACKAGE = Path(chatledger.__file__).resolve().parent


def _module_names() -> list[str]:
    """Every module of the package, by dotted name."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _is_public(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def test_only_the_drawn_modules_have_public_names() -> None:
    modules = _module_names()
    assert len(modules) > 100
    assert sorted(name for name in modules if _is_public(name)) == sorted(PUBLIC)


@pytest.mark.parametrize("name", PUBLIC)
def test_a_public_module_holds_only_what_it_exports(name: str) -> None:
    """No helper, driver or stray import is reachable under a public name."""
    module = importlib.import_module(name)
    assert module.__all__ == sorted(module.__all__) and module.__all__
    exported = set(module.__all__)
    subpackages = {public.rpartition(".")[2] for public in PUBLIC if public.startswith(name + ".")}
    # (pytest's assertion rewriting adds names that are no identifiers: not ours)
    stray = {attribute for attribute in vars(module) if attribute.isidentifier()
             and not attribute.startswith("_") and attribute not in exported | subpackages}
    assert stray <= {"annotations"}  # `from __future__ import annotations`


def test_each_public_object_is_exported_once() -> None:
    owners: dict[int, list[str]] = {}
    for name in PUBLIC:
        module: ModuleType = importlib.import_module(name)
        for attribute in module.__all__:
            owners.setdefault(id(getattr(module, attribute)), []).append(f"{name}.{attribute}")
    assert [names for names in owners.values() if len(names) > 1] == []


def test_the_exported_names_of_the_integrations_are_pinned() -> None:
    import chatledger.langchain
    import chatledger.langgraph
    import chatledger.transfer

    assert chatledger.langchain.__all__ == [
        "ChatLedgerHistory", "MigrationReport", "TranscriptMiddleware", "Undecodable",
        "close_shared_stores", "from_ledger", "migrate_from_langchain", "to_ledger"]
    assert chatledger.langgraph.__all__ == [
        "AsyncLedgerSaver", "AsyncLedgerStore", "AsyncThreadRuns", "CheckpointConflict",
        "CheckpointLost", "CopyReport", "InvalidStateValue", "ItemCopyReport", "LeaseLost",
        "LedgerSaver", "LedgerStore", "ThreadBusy", "ThreadCopy", "ThreadDifference",
        "ThreadRuns", "acompare_threads", "acopy_items", "acopy_threads",
        "alatest_checkpoint_id", "compare_threads", "copy_items", "copy_threads",
        "latest_checkpoint_id", "thread_config"]
    assert chatledger.transfer.__all__ == [
        "BadRecord", "Emptied", "ExportReport", "ImportReport", "Line", "Progress",
        "SessionImport", "emptied_line", "export_sessions", "import_sessions", "json_line",
        "parse_line", "record"]


def test_the_walk_sees_a_public_module_where_there_should_be_none() -> None:
    """The first check above would catch the slip it is there for."""
    assert _is_public("chatledger.langgraph") and not _is_public("chatledger.langgraph._chain")
    assert not _is_public("chatledger._backends.redis.calls")
    assert "chatledger._backends.redis.calls" in _module_names()


def test_encryption_is_reached_from_the_package() -> None:
    """Keyring and its error live in underscored modules, exported once by chatledger."""
    assert (chatledger.Keyring.__module__, chatledger.EncryptionKeyError.__module__) == (
        "chatledger._crypto", "chatledger._errors")
    assert "Keyring" in chatledger.__all__ and "EncryptionKeyError" in chatledger.__all__


def test_erasure_is_reached_from_the_package() -> None:
    """The erasure report and the error of a session's user, exported once by chatledger."""
    assert (chatledger.ForgetReport.__module__, chatledger.SessionUserError.__module__) == (
        "chatledger._results", "chatledger._errors")
    assert "ForgetReport" in chatledger.__all__ and "SessionUserError" in chatledger.__all__

def test_key_rotation_is_a_store_method_with_a_report_exported_once() -> None:
    assert chatledger.RotationReport.__module__ == "chatledger._results"
    assert "RotationReport" in chatledger.__all__
    for store in (chatledger.Store, chatledger.AsyncStore):
        assert callable(store.rotate_key)
