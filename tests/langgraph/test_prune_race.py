"""A run's put that lands between a prune's restatement and its trim (keep_latest).

The ledger the pruning saver uses is wrapped so that, right after the restatement
is appended, a run continues the thread through another saver on the real store:
deterministic, no timing. The trim must cut only what came before the
restatement, never the run's checkpoint nor the restated values it carries.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

from chatledger._results import Ack
from chatledger.langgraph import AsyncLedgerSaver, LedgerSaver
from chatledger.langgraph._async.ledger import AsyncCheckpointLedger
from chatledger.langgraph._sync.ledger import CheckpointLedger

MD: Any = {"source": "loop", "step": 0}


def _config(checkpoint_id: str | None = None) -> Any:
    configurable = {"thread_id": "t", "checkpoint_ns": ""}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _checkpoint(parent: Any, number: int, **values: Any) -> tuple[Any, Any]:
    """A child of ``parent`` that writes ``values`` (new versions for those only)."""
    versions = dict.fromkeys(values, f"{number:032}.0")
    base = parent if parent is not None else empty_checkpoint()
    base = {**base, "channel_values": {**base.get("channel_values", {}), **values},
            "channel_versions": {**base.get("channel_versions", {}), **versions}}
    return create_checkpoint(base, None, number), versions


class _AsyncInterrupted(AsyncLedgerSaver):
    """Runs ``after_restatement`` once, right after the prune's restatement is stored."""

    after_restatement: Callable[[], Awaitable[None]] | None = None

    def _ledger(self, thread_id: str, ns: str,
                user: str | None = None) -> AsyncCheckpointLedger:
        saver = self

        class Interrupted(AsyncCheckpointLedger):
            async def append(self, messages: Any, **kwargs: Any) -> Ack:
                ack = await super().append(messages, **kwargs)
                hook, saver.after_restatement = saver.after_restatement, None
                if hook is not None:
                    await hook()
                return ack

        return Interrupted(super()._ledger(thread_id, ns, user).session, self._values)


class _Interrupted(LedgerSaver):
    after_restatement: Callable[[], None] | None = None

    def _ledger(self, thread_id: str, ns: str, user: str | None = None) -> CheckpointLedger:
        saver = self

        class Interrupted(CheckpointLedger):
            def append(self, messages: Any, **kwargs: Any) -> Ack:
                ack = super().append(messages, **kwargs)
                hook, saver.after_restatement = saver.after_restatement, None
                if hook is not None:
                    hook()
                return ack

        return Interrupted(super()._ledger(thread_id, ns, user).session, self._values)


def _history() -> list[tuple[Any, Any]]:
    first = _checkpoint(None, 1, messages=["hello"], step=1)
    second = _checkpoint(first[0], 2, step=2)  # carries "messages" from the first
    third = _checkpoint(second[0], 3, step=3)  # the run's, put during the prune
    return [first, second, third]


async def _async_race(url: str) -> Any:
    (first, v1), (second, v2), (third, v3) = _history()
    pruner: Any
    async with await _AsyncInterrupted.from_url(url) as pruner, \
            await AsyncLedgerSaver.from_url(url) as run:
        await run.aput(_config(), first, MD, v1)
        await run.aput(_config(first["id"]), second, MD, v2)

        async def run_goes_on() -> None:
            await run.aput(_config(second["id"]), third, MD, v3)

        pruner.after_restatement = run_goes_on
        await pruner.aprune(["t"])
        assert pruner.after_restatement is None, "the prune stored no restatement"
        latest = await run.aget_tuple(_config())
        listed = [t.checkpoint["id"] async for t in run.alist(_config())]
    return third["id"], second["id"], latest, listed


def _sync_race(url: str) -> Any:
    (first, v1), (second, v2), (third, v3) = _history()
    pruner: Any
    with _Interrupted.from_url(url) as pruner, LedgerSaver.from_url(url) as run:
        run.put(_config(), first, MD, v1)
        run.put(_config(first["id"]), second, MD, v2)

        def run_goes_on() -> None:
            run.put(_config(second["id"]), third, MD, v3)

        pruner.after_restatement = run_goes_on
        pruner.prune(["t"])
        assert pruner.after_restatement is None, "the prune stored no restatement"
        latest = run.get_tuple(_config())
        listed = [t.checkpoint["id"] for t in run.list(_config())]
    return third["id"], second["id"], latest, listed


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_put_between_the_restatement_and_the_trim_is_kept(shared_url: str,
                                                           use_async: bool) -> None:
    third, second, latest, listed = (asyncio.run(_async_race(shared_url)) if use_async
                                     else _sync_race(shared_url))
    assert latest is not None and latest.checkpoint["id"] == third  # the run's head
    # Its values whole: "step" its own, "messages" carried from the restatement.
    assert latest.checkpoint["channel_values"] == {"messages": ["hello"], "step": 3}
    assert listed == [third, second]  # the run's checkpoint, and the latest restated
