"""Loss made loud: the checkpoint the application knows must still be in its thread.

A store that restarted empty, a failover to a stale replica, an expired or
deleted thread: LangGraph then finds no checkpoint (or an older one) and
starts over, silently. The application can say what it knew:
``config["configurable"]["known_checkpoint_id"]``, the latest root-namespace
checkpoint id it saw on the thread. A read of the thread (``get_tuple``, so
``invoke`` and ``get_state``) then raises :class:`CheckpointLost` unless the
root namespace still *holds* that checkpoint: stored and not deleted (the
latest or any before it, branches included), or named as the parent of one
that is (``prune`` keeps the latest checkpoint, not its parent).

The walk that finds the latest checkpoint sees the known one first when it is
the latest (the usual case: no read added); otherwise it walks on until it
meets it, or through the whole namespace to report the loss. No I/O here: the
savers feed :class:`KnownCheckpoint` what their walk finds.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from .._errors import MemoryLostError
from ._chain import Found

__all__ = [
    "KNOWN_KEY",
    "CheckpointLost",
    "KnownCheckpoint",
    "alatest_checkpoint_id",
    "known_checkpoint",
    "latest_checkpoint_id",
    "thread_config",
]

KNOWN_KEY = "known_checkpoint_id"
"""The key of ``config["configurable"]`` naming the checkpoint the application knows."""


class CheckpointLost(MemoryLostError):
    """The thread no longer holds the checkpoint the application knew.

    ``expected_checkpoint``: the ``known_checkpoint_id`` the config named;
    ``found_checkpoint``: the latest checkpoint of the namespace now (None: it
    has none: deleted, expired, or the store restarted empty). ``session``,
    ``found`` (the session's version) and ``found_ledger`` are the store's view.
    """

    def __init__(self, session: str, version: int, ledger: str | None, *, thread_id: str,
                 checkpoint_ns: str, expected_checkpoint: str,
                 found_checkpoint: str | None) -> None:
        super().__init__(session, version, version, found_ledger=ledger)
        self.thread_id = thread_id
        self.checkpoint_ns = checkpoint_ns
        self.expected_checkpoint = expected_checkpoint
        self.found_checkpoint = found_checkpoint
        now = ("holds no checkpoint" if found_checkpoint is None
               else f"holds {found_checkpoint!r} as its latest checkpoint and not that one")
        self.args = (
            f"thread {thread_id!r}: the application knew checkpoint {expected_checkpoint!r} "
            f"but the thread {now}; its memory was lost (the store restarted empty, failed "
            "over to a stale copy, or the thread expired or was deleted). Nothing was run; "
            "tell the user, or start the thread over without known_checkpoint_id",
        )


def known_checkpoint(config: RunnableConfig, checkpoint_ns: str) -> str | None:
    """The checkpoint the application says it knows, for a read of ``checkpoint_ns``.

    Only the root namespace is checked: a subgraph's reads carry the
    application's config too, and their ids are not the one it saw.
    """
    known = config["configurable"].get(KNOWN_KEY)
    return None if checkpoint_ns or known is None or known == "" else str(known)


class KnownCheckpoint:
    """What a walk of the root namespace, newest first, says about the known checkpoint."""

    def __init__(self, checkpoint_id: str) -> None:
        self.checkpoint_id = checkpoint_id
        self.held = False
        self.latest: str | None = None

    def see(self, found: Found) -> None:
        """Feed each live checkpoint the walk yields, newest first."""
        entry = found.entry
        if self.latest is None:
            self.latest = entry.checkpoint_id
        if self.checkpoint_id in (entry.checkpoint_id, entry.parent_id):
            self.held = True

    def lost(self, session: str, version: int, ledger: str | None, thread_id: str,
             checkpoint_ns: str) -> CheckpointLost:
        return CheckpointLost(session, version, ledger, thread_id=thread_id,
                              checkpoint_ns=checkpoint_ns,
                              expected_checkpoint=self.checkpoint_id,
                              found_checkpoint=self.latest)


# -- the pattern for a web service, in one line each ---------------------------


def thread_config(thread_id: str, known_checkpoint_id: str | None = None,
                  **configurable: Any) -> RunnableConfig:
    """The config of a turn on ``thread_id``, stating the checkpoint the application
    last saw there (None: a new conversation, nothing known yet)."""
    values: dict[str, Any] = {"thread_id": thread_id, **configurable}
    if known_checkpoint_id is not None:
        values[KNOWN_KEY] = known_checkpoint_id
    return {"configurable": values}


def latest_checkpoint_id(graph: Any, config: RunnableConfig) -> str | None:
    """The thread's latest checkpoint id after a turn, to keep beside the conversation
    (``graph.get_state``: checked against the config's known id like the turn itself)."""
    return _checkpoint_id(graph.get_state(config).config)


async def alatest_checkpoint_id(graph: Any, config: RunnableConfig) -> str | None:
    """:func:`latest_checkpoint_id` for async code (``graph.aget_state``)."""
    return _checkpoint_id((await graph.aget_state(config)).config)


def _checkpoint_id(config: RunnableConfig) -> str | None:
    checkpoint_id = config["configurable"].get("checkpoint_id")
    return None if checkpoint_id is None else str(checkpoint_id)
