"""What the async saver adds by hand to its generated source: sync calls, and opening.

LangGraph calls a checkpointer's sync methods from inside async runs: a
subgraph's ``.invoke()`` in an async graph, ``graph.get_state()`` from a
worker thread. LangGraph's own async savers serve those calls by running the
coroutine on the event loop the saver was made on; so does this mix-in. A sync
call on that loop's own thread would wait for itself: it raises instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Coroutine,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from types import TracebackType
from typing import Any, Generic, Protocol, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)

__all__ = ["AsyncOpening", "LoopBound", "LoopBridge"]

T = TypeVar("T")


class _Closable(Protocol):
    async def aclose(self) -> None: ...


C = TypeVar("C", bound=_Closable)


class AsyncOpening(Generic[C]):
    """``await`` it for the saver, or ``async with`` it to close the saver after,
    as LangGraph's ``AsyncSqliteSaver.from_conn_string`` is used."""

    def __init__(self, opening: Coroutine[Any, Any, C]) -> None:
        self._opening = opening
        self._opened: C | None = None

    def __await__(self) -> Generator[Any, None, C]:
        return self._opening.__await__()

    async def __aenter__(self) -> C:
        self._opened = await self._opening
        return self._opened

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        if self._opened is not None:
            await self._opened.aclose()


class LoopBound:
    """An async object whose sync calls run on the event loop it was made on."""

    loop: asyncio.AbstractEventLoop | None = None

    def bind_loop(self) -> None:
        """Remember the running loop (the one sync calls are sent to), if any."""
        try:
            self.loop = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None

    def usable_loop(self, *, not_running: str, own_thread: str) -> asyncio.AbstractEventLoop:
        """The bound loop, for a sync call from another thread: RuntimeError
        (``not_running``) when it is gone, InvalidStateError (``own_thread``) when
        called on that loop's own thread, where the call would wait for itself."""
        loop = self.loop
        if loop is None or loop.is_closed() or not loop.is_running():
            raise RuntimeError(not_running)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            raise asyncio.InvalidStateError(own_thread)
        return loop


class LoopBridge(LoopBound):
    """Sync checkpointer calls, run on the loop the async saver was made on."""

    def _loop_for(self, method: str) -> asyncio.AbstractEventLoop:
        return self.usable_loop(
            not_running=f"AsyncLedgerSaver.{method}() runs on the event loop the saver was "
                        "opened on, and that loop is not running: use the async method "
                        f"(a{method}), or LedgerSaver for synchronous code",
            own_thread=f"AsyncLedgerSaver.{method}() was called on its own event loop's "
                       f"thread, where it would wait for itself: await a{method}() instead")

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Run the coroutine ``a<method>(*args, **kwargs)`` on the saver's loop."""
        loop = self._loop_for(method)
        call = _awaited(getattr(self, f"a{method}")(*args, **kwargs))
        return asyncio.run_coroutine_threadsafe(call, loop).result()

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        found: CheckpointTuple | None = self._call("get_tuple", config)
        return found

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None,
             limit: int | None = None) -> Iterator[CheckpointTuple]:
        # One call for the whole listing: LangGraph's callers consume it whole.
        loop = self._loop_for("list")
        alist = getattr(self, "alist")  # noqa: B009 -- the async saver's, not this mix-in's
        listing = _listed(alist(config, filter=filter, before=before, limit=limit))
        return iter(asyncio.run_coroutine_threadsafe(listing, loop).result())

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        stored: RunnableConfig = self._call("put", config, checkpoint, metadata, new_versions)
        return stored

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                   task_id: str, task_path: str = "") -> None:
        self._call("put_writes", config, writes, task_id, task_path)

    def delete_thread(self, thread_id: str) -> None:
        self._call("delete_thread", thread_id)

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._call("delete_for_runs", run_ids)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._call("copy_thread", source_thread_id, target_thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._call("prune", thread_ids, strategy=strategy)

    def get_delta_channel_history(self, *, config: RunnableConfig,
                                  channels: Sequence[str]) -> Mapping[str, DeltaChannelHistory]:
        history: Mapping[str, DeltaChannelHistory] = self._call(
            "get_delta_channel_history", config=config, channels=channels)
        return history


async def _awaited(call: Awaitable[T]) -> T:
    return await call


async def _listed(items: AsyncIterator[T]) -> list[T]:
    return [item async for item in items]
