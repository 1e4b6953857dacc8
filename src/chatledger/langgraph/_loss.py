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
from ._heads import Head

__all__ = [
    "KNOWN_KEY",
    "CheckpointLost",
    "KnownCheckpoint",
    "alatest_checkpoint_id",
    "known_checkpoint",
    "latest_checkpoint_id",
    "rolled_back",
    "thread_config",
]

KNOWN_KEY = "known_checkpoint_id"
"""The key of ``config["configurable"]`` naming the checkpoint the application knows."""


class CheckpointLost(MemoryLostError):
    """The thread no longer holds the checkpoint the application knew (or that
    this saver saw, when its ledger went back in time under it).

    ``expected_checkpoint``: the ``known_checkpoint_id`` the config named, or
    the latest checkpoint this saver saw; ``found_checkpoint``: the latest
    checkpoint of the namespace now (None: it has none: deleted, expired, or the
    store restarted empty). ``session``, ``expected``/``found`` (versions) and
    ``found_ledger`` are the store's view.
    """

    def __init__(self, session: str, version: int, ledger: str | None, *, thread_id: str,
                 checkpoint_ns: str, expected_checkpoint: str, found_checkpoint: str | None,
                 seen_version: int | None = None) -> None:
        super().__init__(session, version if seen_version is None else seen_version, version,
                         ledger=None if seen_version is None else ledger, found_ledger=ledger)
        self.thread_id = thread_id
        self.checkpoint_ns = checkpoint_ns
        self.expected_checkpoint = expected_checkpoint
        self.found_checkpoint = found_checkpoint
        now = ("holds no checkpoint" if found_checkpoint is None
               else f"holds {found_checkpoint!r} as its latest checkpoint and not that one")
        where = f"thread {thread_id!r}" + (f" namespace {checkpoint_ns!r}" if checkpoint_ns
                                            else "")
        if seen_version is None:
            knew = f"the application knew checkpoint {expected_checkpoint!r}"
            then = "tell the user, or start the thread over without known_checkpoint_id"
        else:
            knew = (f"this saver saw checkpoint {expected_checkpoint!r} at version "
                    f"{seen_version} of ledger {ledger!r}, which is at version {version} now")
            then = "tell the user, or delete the thread to start it over"
        self.args = (
            f"{where}: {knew} but the thread {now}; its memory was lost (the store "
            "restarted empty, failed over to a stale copy, or the thread expired or was "
            f"deleted). Nothing was run; {then}",
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


def rolled_back(seen: Head | None, version: int, ledger: str | None) -> bool:
    """Whether a read found a namespace's ledger behind what this saver saw of it
    before the read began: the same ledger id at a lower version.

    Found without the application's help, and never by mistake: a ledger's
    version never goes down (a trim or a prune keeps it, a delete makes a new
    ledger id), so only writes lost after they were acknowledged do that (a
    failover to a replica that lagged, an older copy restored). A ledger gone or
    replaced is not judged here: a delete by another process looks the same.
    """
    return (seen is not None and ledger is not None and seen.ledger == ledger
            and version < seen.version)


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
