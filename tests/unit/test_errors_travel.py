"""Every exception chatledger exports survives pickling: it crosses process boundaries
(multiprocessing, concurrent.futures, run_concurrently) as itself, message and
attributes included."""

from __future__ import annotations

import importlib
import multiprocessing
import pickle
import pkgutil
from concurrent.futures import ProcessPoolExecutor
from types import ModuleType
from typing import Any

import pytest

import chatledger

# Representative constructor arguments (args, kwargs) of each exported exception,
# by qualified name. A new exported exception fails the walk until it is added here.
SAMPLES: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "chatledger._errors.ChatLedgerError": (("something went wrong",), {}),
    "chatledger._errors.ConfigError": (("bad URL 'redis://h:x'",), {}),
    "chatledger._errors.InvalidMessage": (("messages[1].metadata.when", "not JSON"), {}),
    "chatledger._errors.ConflictError": (("s", 3, 5), {}),
    "chatledger._errors.MemoryLostError": (("s", 7, 0), {"ledger": "L1", "found_ledger": "L2"}),
    "chatledger._errors.CorruptEntryError": (("s", 4, "not JSON"), {}),
    "chatledger._errors.EncryptionKeyError": (("s", 4, "no key 'k1'", "k1"), {}),
    "chatledger._errors.SessionUserError": (("s", "ann", "bob"), {}),
    "chatledger._errors.BackendError": (("redis: NOAUTH",), {}),
    "chatledger._errors.BackendUnavailable": (("redis: Connection refused",), {}),
    "chatledger.langgraph._chain.CheckpointConflict": (
        ("thread-1", 9), {"thread_id": "t1", "checkpoint_ns": "", "parent": "c1",
                          "latest": "c2"}),
    "chatledger.langgraph._loss.CheckpointLost": (
        ("lg:2:t1:", 3, "L1"), {"thread_id": "t1", "checkpoint_ns": "",
                                "expected_checkpoint": "c9", "found_checkpoint": "c2",
                                "seen_version": 7}),
    "chatledger.langgraph._runs.ThreadBusy": (
        ("t1",), {"holder": "run 4", "message": "thread 't1' is busy", "waited": 1.5}),
    "chatledger.langgraph._runs.LeaseLost": (
        ("t1",), {"holder": "run 5", "message": "thread 't1' was taken over"}),
    "chatledger.langgraph._exact.InvalidStateValue": (
        ("messages", (0, "content"), "message 1 of channel 'messages', its content",
         "\ud83d"), {}),
    "chatledger.transfer._errors.BadRecord": (
        (12, "metadata.n: integer 18446744073709551616 is outside the signed 64-bit range",
         "metadata.n"), {}),
    "chatledger.testing._resp.RedisCommandError": (("ERR unknown command",), {}),
    "chatledger.testing._concurrency.WorkersFailed": (("worker 0: boom",), {}),
}


def _public_modules() -> list[ModuleType]:
    """chatledger and every submodule whose dotted name has no private part."""
    names = [info.name for info in pkgutil.walk_packages(chatledger.__path__, "chatledger.")
             if not any(part.startswith("_") for part in info.name.split("."))]
    return [chatledger, *(importlib.import_module(name) for name in names)]


def _exported_exceptions() -> set[type[BaseException]]:
    return {obj for module in _public_modules() for name in getattr(module, "__all__", ())
            if isinstance(obj := getattr(module, name), type) and issubclass(obj, BaseException)}


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def test_every_exported_exception_pickles_with_its_message_and_attributes() -> None:
    exported = {_qualified(cls): cls for cls in _exported_exceptions()}
    assert set(exported) == set(SAMPLES), "add (or drop) representative arguments in SAMPLES"
    for name, cls in exported.items():
        args, kwargs = SAMPLES[name]
        error = cls(*args, **kwargs)
        error.add_note("a note added on the way up")
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            copy = pickle.loads(pickle.dumps(error, protocol))
            assert type(copy) is cls, name
            assert (str(copy), copy.args) == (str(error), error.args), name
            assert vars(copy) == vars(error), name


def _lose_memory(session: str) -> None:
    raise chatledger.MemoryLostError(session, 7, 0, ledger="L1", found_ledger=None)


def test_an_error_raised_in_a_worker_process_reaches_the_parent_as_itself() -> None:
    # spawn: the child is a fresh interpreter, so the error really travels as bytes.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        future = pool.submit(_lose_memory, "customer-42")
        with pytest.raises(chatledger.MemoryLostError) as raised:
            future.result(timeout=60)
    error = raised.value
    assert (error.session, error.expected, error.found) == ("customer-42", 7, 0)
    assert (error.ledger, error.found_ledger) == ("L1", None)
    assert "ledger 'L1' is gone" in str(error)
    assert "_lose_memory" in str(error.__cause__)  # the child's traceback, kept by the pool
