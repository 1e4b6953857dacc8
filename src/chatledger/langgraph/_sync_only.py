"""LedgerSaver's async methods, which say which saver has them.

``BaseCheckpointSaver``'s async methods raise a bare ``NotImplementedError``;
a graph compiled with the sync ``LedgerSaver`` and run with ``ainvoke`` or
``astream`` would fail with no word of why. These name the saver to use.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)

__all__ = ["SyncOnly"]


def _refused(method: str) -> NotImplementedError:
    return NotImplementedError(
        f"LedgerSaver is synchronous and has no {method}(): for ainvoke, astream and "
        "other async code use AsyncLedgerSaver (chatledger.langgraph), which has both")


class SyncOnly:
    """The async methods LangGraph calls from ``ainvoke``/``astream``, refused by name."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        raise _refused("aget_tuple")

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None,
                    limit: int | None = None) -> AsyncIterator[CheckpointTuple]:
        raise _refused("alist")
        yield  # pragma: no cover -- makes this an async generator, as the base's

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint,
                   metadata: CheckpointMetadata, new_versions: ChannelVersions) -> RunnableConfig:
        raise _refused("aput")

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                          task_id: str, task_path: str = "") -> None:
        raise _refused("aput_writes")

    async def adelete_thread(self, thread_id: str) -> None:
        raise _refused("adelete_thread")
