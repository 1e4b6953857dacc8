"""Checkpointer factories for check_checkpointer: module level, so spawned processes
import them, each taking the target the checker shares."""

from __future__ import annotations

import multiprocessing
import os
import threading
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver

from chatledger.langgraph import LedgerSaver


def in_memory(target: str) -> InMemorySaver:
    """LangGraph's saver of one process: only a thread-mode check can share it."""
    return InMemorySaver()


def ledger_in_memory(target: str) -> LedgerSaver:
    return LedgerSaver.from_url("memory://")


class FailingPuts(InMemorySaver):
    """Every put on an ``exit`` thread fails: those turns end in an error, not a refusal."""

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        if "-exit-" in config["configurable"]["thread_id"]:
            raise RuntimeError("disk full")
        return super().put(config, checkpoint, metadata, new_versions)


def failing_puts(target: str) -> FailingPuts:
    return FailingPuts()


def broken_in_workers(target: str) -> InMemorySaver:
    """Opens in the checker's process, fails in the spawned ones."""
    if multiprocessing.parent_process() is not None:
        raise OSError("cannot reach the database")
    return InMemorySaver()


class HangingReads(InMemorySaver):
    """Worker thread 1's reads do not return until ``release`` is set."""

    release = threading.Event()

    def get_tuple(self, config: Any) -> Any:
        if threading.current_thread().name.endswith("-1"):
            self.release.wait(30)
        return super().get_tuple(config)


def hanging_reads(target: str) -> HangingReads:
    return HangingReads()


def exits_in_workers(target: str) -> InMemorySaver:
    """Opens in the checker's process; the spawned ones exit without a word."""
    if multiprocessing.parent_process() is not None:
        os._exit(3)
    return InMemorySaver()


def not_a_saver(target: str) -> object:
    return {"target": target}
