"""What lands between a put's read and its append, made to happen deterministically.

The ledger a saver uses is wrapped so that, right after the put has read the
newest entries, another writer appends (or deletes) on the real store.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from chatledger import ConflictError, open_store, system
from chatledger.langgraph import AsyncLedgerSaver, CheckpointConflict, LedgerSaver
from chatledger.langgraph._async.ledger import AsyncCheckpointLedger
from chatledger.langgraph._layout import session_id
from chatledger.langgraph._sync.ledger import CheckpointLedger

Meddle = Callable[[Any], None]


class _MeddledSaver(LedgerSaver):
    meddle: Meddle

    def _known_head(self, session: str, parent_id: str | None) -> Any:
        return None  # every attempt reads, so that the meddling lands after a read

    def _ledger(self, thread_id: str, ns: str, user: str | None = None) -> CheckpointLedger:
        saver = self

        class Meddled(CheckpointLedger):
            def find(self, match: Any, walk: Any) -> Any:
                found = super().find(match, walk)
                saver.meddle(self.session)
                return found

        return Meddled(super()._ledger(thread_id, ns, user).session)


class _AsyncMeddledSaver(AsyncLedgerSaver):
    meddle: Meddle

    def _known_head(self, session: str, parent_id: str | None) -> Any:
        return None

    def _ledger(self, thread_id: str, ns: str,
                user: str | None = None) -> AsyncCheckpointLedger:
        saver = self

        class Meddled(AsyncCheckpointLedger):
            async def find(self, match: Any, walk: Any) -> Any:
                found = await super().find(match, walk)
                saver.meddle((saver.store, self.session.id))
                return found

        return Meddled(super()._ledger(thread_id, ns, user).session)


def _config(parent: str | None = None) -> Any:
    configurable = {"thread_id": "t", "checkpoint_ns": ""}
    if parent:
        configurable["checkpoint_id"] = parent
    return {"configurable": configurable}


def _put_twice(url: str, meddle_times: int, meddle: str, use_async: bool) -> Any:
    """Put a checkpoint and a child; the child's put meets ``meddle`` that many times."""
    first, second = empty_checkpoint(), empty_checkpoint()
    md: Any = {"source": "loop", "step": 0}
    if use_async:
        return asyncio.run(_async_put_twice(url, meddle_times, meddle, first, second, md))
    with _MeddledSaver.from_url(url) as saver:
        saver.meddle = lambda session: None
        saver.put(_config(), first, md, {})
        saver.meddle = _meddler(meddle, meddle_times, lambda s: s)
        return saver.put(_config(first["id"]), second, md, {})


async def _async_put_twice(url: str, times: int, meddle: str, first: Any, second: Any,
                           md: Any) -> Any:
    async with await _AsyncMeddledSaver.from_url(url) as saver:
        saver.meddle = lambda session: None
        await saver.aput(_config(), first, md, {})
        with open_store(url) as other:  # the other writer
            saver.meddle = _meddler(meddle, times, lambda handle: other.session(handle[1]))
            return await saver.aput(_config(first["id"]), second, md, {})


def _meddler(kind: str, times: int, session_of: Callable[[Any], Any]) -> Meddle:
    left = [times]

    def meddle(handle: Any) -> None:
        if left[0] <= 0:
            return
        left[0] -= 1
        session = session_of(handle)
        if kind == "write":
            session.append([system("another task's write, not a checkpoint")])
        else:
            session.delete()

    return meddle


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_writes_that_get_in_first_are_no_conflict(shared_url: str, use_async: bool) -> None:
    stored = _put_twice(shared_url, 2, "write", use_async)
    with LedgerSaver.from_url(shared_url) as saver:
        latest = saver.get_tuple(_config())
    assert latest is not None and latest.config == stored


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_put_that_never_gets_its_turn_says_so(shared_url: str, use_async: bool) -> None:
    with pytest.raises(ConflictError):
        _put_twice(shared_url, 100, "write", use_async)


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_thread_deleted_under_a_put_is_a_conflict(shared_url: str, use_async: bool) -> None:
    with pytest.raises(CheckpointConflict) as caught:
        _put_twice(shared_url, 1, "delete", use_async)
    assert caught.value.latest is None


def _prune_meddled(url: str, times: int, use_async: bool) -> None:
    """Two checkpoints, then a prune whose restatement meets a write ``times`` times."""
    first, second = empty_checkpoint(), empty_checkpoint()
    md: Any = {"source": "loop", "step": 0}
    if use_async:
        asyncio.run(_async_prune_meddled(url, times, first, second, md))
        return
    with _MeddledSaver.from_url(url) as saver:
        saver.meddle = lambda session: None
        saver.put(_config(), first, md, {})
        saver.put(_config(first["id"]), second, md, {})
        saver.meddle = _meddler("write", times, lambda s: s)
        saver.prune(["t"])


async def _async_prune_meddled(url: str, times: int, first: Any, second: Any, md: Any) -> None:
    async with await _AsyncMeddledSaver.from_url(url) as saver:
        saver.meddle = lambda session: None
        await saver.aput(_config(), first, md, {})
        await saver.aput(_config(first["id"]), second, md, {})
        with open_store(url) as other:
            saver.meddle = _meddler("write", times, lambda handle: other.session(handle[1]))
            await saver.aprune(["t"])


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_prune_restates_again_after_a_write_gets_in_first(shared_url: str,
                                                          use_async: bool) -> None:
    _prune_meddled(shared_url, 1, use_async)
    with LedgerSaver.from_url(shared_url) as saver:
        listed = list(saver.list(_config()))
        info = saver.store.session(session_id("t", "")).info()
    assert len(listed) == 1  # only the latest checkpoint is left
    assert info is not None and info.count == 1  # the write that got in was trimmed with it


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_prune_that_never_gets_its_turn_says_so_and_cuts_nothing(shared_url: str,
                                                                  use_async: bool) -> None:
    with pytest.raises(ConflictError):
        _prune_meddled(shared_url, 100, use_async)
    with LedgerSaver.from_url(shared_url) as saver:
        assert len(list(saver.list(_config()))) == 2


class _CountingSaver(LedgerSaver):
    reads = 0

    def _ledger(self, thread_id: str, ns: str, user: str | None = None) -> CheckpointLedger:
        saver = self

        class Counted(CheckpointLedger):
            def find(self, match: Any, walk: Any, since: int | None = None) -> Any:
                saver.reads += 1
                return super().find(match, walk, since)

        return Counted(super()._ledger(thread_id, ns).session)


def test_a_put_continuing_what_the_saver_knows_reads_nothing(shared_url: str) -> None:
    md: Any = {"source": "loop", "step": 0}
    first, second, third = empty_checkpoint(), empty_checkpoint(), empty_checkpoint()
    with _CountingSaver.from_url(shared_url) as saver:
        saver.put(_config(), first, md, {})
        saver.put_writes(_config(first["id"]), [("a", 1)], "task")
        reads = saver.reads
        saver.put(_config(first["id"]), second, md, {})
        assert saver.reads == reads  # its own write since: the head is still known

        with open_store(shared_url) as other:  # another writer: the known head is stale
            other.session(session_id("t", "")).append([system("another writer's entry")])
        saver.put(_config(second["id"]), third, md, {})
        assert saver.reads == reads + 1  # the append failed, the put read and went on

        latest = saver.get_tuple(_config())
    assert latest is not None and latest.config == _config(third["id"])
    assert latest.parent_config == _config(second["id"])


def test_a_known_head_is_not_used_once_a_sweep_is_due(shared_url: str) -> None:
    from tests.conftest import FakeClock

    clock = FakeClock()
    md: Any = {"source": "loop", "step": 0}
    first, second = empty_checkpoint(), empty_checkpoint()
    with _CountingSaver.from_url(shared_url, ttl=100, clock=clock) as saver:
        saver.put(_config(), first, md, {})
        reads = saver.reads
        clock.advance(30)  # past a quarter of the ttl: the thread is swept
        saver.put(_config(first["id"]), second, md, {})
        assert saver.reads == reads + 1
        clock.advance(60)
        assert saver.get_tuple(_config()) is not None  # kept alive by the sweep
