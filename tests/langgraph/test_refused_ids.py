"""Ids LangGraph passes that the store could not hold (a NUL, a lone surrogate,
too long) are refused in LangGraph's terms, ``thread_id`` or ``task_id``, never
the saver's session ids, and nothing is stored."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from chatledger.langgraph import AsyncLedgerSaver, LedgerSaver, thread_config

LONE = "\ud83d"


def _config(thread: object, ns: str = "", checkpoint_id: str | None = None) -> Any:
    configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


@pytest.mark.parametrize(("config", "words"), [
    (_config(f"t{LONE}"), r"^thread_id 't\\ud83d' contains a lone surrogate"),
    (_config("a\x00b"), r"^thread_id 'a\\x00b' contains a NUL character"),
    (_config("x" * 1_100), r"^thread_id is 1,100 bytes of UTF-8, over 1,008"),
    (_config(None), r"^thread_id is None: pass the thread's id in config"),
    ({"configurable": {"checkpoint_ns": ""}}, r"^the config names no thread"),
    ({}, r"^the config names no thread"),
    (_config("t", f"n{LONE}"), r"^checkpoint_ns 'n\\ud83d' contains a lone surrogate"),
    (_config("t", "x" * 1_020), r"^thread_id and checkpoint_ns are too long together: "
                                r"1,027 bytes"),
    (_config("t", "", f"c{LONE}"), r"^checkpoint_id 'c\\ud83d' contains a lone surrogate"),
])
def test_a_config_the_store_cannot_hold_is_refused_in_langgraphs_terms(
        config: Any, words: str) -> None:
    with LedgerSaver.from_url("memory://") as saver:
        with pytest.raises(ValueError, match=words):
            saver.put(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
        with pytest.raises(ValueError, match=words):
            saver.get_tuple(config)
        assert list(saver.list(None)) == []


@pytest.mark.parametrize(("task", "path", "channel", "words"), [
    (f"task{LONE}", "", "ch", r"^task_id 'task\\ud83d' contains a lone surrogate"),
    ("task", f"p{LONE}", "ch", r"^task_path 'p\\ud83d' contains a lone surrogate"),
    ("task", "", f"c{LONE}h", r"^channel 'c\\ud83dh' contains a lone surrogate"),
    ("task", "", "c\x00", r"^channel 'c\\x00' contains a NUL character"),
])
def test_writes_the_store_cannot_hold_are_refused_and_nothing_is_stored(
        task: str, path: str, channel: str, words: str) -> None:
    with LedgerSaver.from_url("memory://") as saver:
        stored = saver.put(thread_config("t"), empty_checkpoint(),
                           {"source": "input", "step": -1}, {})
        with pytest.raises(ValueError, match=words):
            saver.put_writes(stored, [(channel, 1)], task, path)
        found = saver.get_tuple(stored)
        assert found is not None and found.pending_writes == []


@pytest.mark.parametrize(("call", "words"), [
    (lambda s: s.copy_thread("a", f"b{LONE}"), r"^thread_id 'b\\ud83d' contains a lone"),
    (lambda s: s.copy_thread(f"a{LONE}", "b"), r"^thread_id 'a\\ud83d' contains a lone"),
    (lambda s: s.copy_thread("a", None), r"^thread_id is None"),
    (lambda s: s.delete_thread("a\x00"), r"^thread_id 'a\\x00' contains a NUL character"),
    (lambda s: s.prune(["a", "x" * 3_000]), r"^thread_id is 3,000 bytes of UTF-8, over 1,008"),
    (lambda s: s.copy_thread("b", "a"), r"^copy_thread: the target thread 'a' already has "
                                         r"checkpoints in namespace ''"),
])
def test_thread_calls_refuse_ids_in_langgraphs_terms_and_change_nothing(
        call: Any, words: str) -> None:
    with LedgerSaver.from_url("memory://") as saver:
        for thread in ("a", "b"):
            saver.put(thread_config(thread), empty_checkpoint(), {"source": "input", "step": -1},
                      {})
        with pytest.raises(ValueError, match=words):
            call(saver)
        assert {t.config["configurable"]["thread_id"] for t in saver.list(None)} == {"a", "b"}


def test_the_sync_saver_under_ainvoke_names_the_async_saver() -> None:
    async def run(saver: LedgerSaver) -> None:
        with pytest.raises(NotImplementedError, match=r"LedgerSaver is synchronous and has no "
                                                      r"aget_tuple.*use AsyncLedgerSaver"):
            await saver.aget_tuple(thread_config("t"))
        for call in (saver.aput(thread_config("t"), empty_checkpoint(), {}, {}),
                     saver.aput_writes(thread_config("t"), [("c", 1)], "task"),
                     saver.adelete_thread("t")):
            with pytest.raises(NotImplementedError, match="use AsyncLedgerSaver"):
                await call
        with pytest.raises(NotImplementedError, match="has no alist"):
            await anext(aiter(saver.alist(None)))

    with LedgerSaver.from_url("memory://") as saver:
        asyncio.run(run(saver))


@pytest.mark.parametrize("value", [2**70, object()])
def test_a_value_the_serializer_refuses_names_its_channel_and_nothing_is_stored(
        value: object) -> None:
    with LedgerSaver.from_url("memory://") as saver:
        stored = saver.put(thread_config("t"), empty_checkpoint(),
                           {"source": "input", "step": -1}, {})
        with pytest.raises(TypeError, match=r"^channel 'answer': LangGraph's serializer cannot "
                                            r"store it: .*; nothing was stored"):
            saver.put_writes(stored, [("answer", value)], "task")
        found = saver.get_tuple(stored)
        assert found is not None and found.pending_writes == []


def _without(field: str) -> Any:
    checkpoint: Any = empty_checkpoint()
    del checkpoint[field]
    return checkpoint


def _with(**fields: Any) -> Any:
    return {**empty_checkpoint(), **fields}


@pytest.mark.parametrize(("checkpoint", "kind", "words"), [
    (None, TypeError, r"^the checkpoint to put must be a dict \(a LangGraph Checkpoint\), "
                      r"got NoneType"),
    ([1], TypeError, r"^the checkpoint to put must be a dict .*got list"),
    (_without("id"), ValueError, r"^the checkpoint to put has no 'id'"),
    (_without("channel_values"), ValueError, r"^the checkpoint to put has no 'channel_values'"),
    (_without("channel_versions"), ValueError,
     r"^the checkpoint to put has no 'channel_versions'"),
    (_with(id=5), TypeError, r"^the checkpoint's id must be a str, got int"),
    (_with(id=f"c{LONE}"), ValueError, r"^the checkpoint's id 'c\\ud83d' contains a lone"),
    (_with(channel_values=[1]), TypeError, r"^the checkpoint's channel_values must be a dict, "
                                           r"got list"),
    (_with(channel_versions=["a"]), TypeError, r"^the checkpoint's channel_versions must be a "
                                               r"dict, got list"),
])
def test_a_put_of_what_is_no_checkpoint_is_refused_in_langgraphs_terms(
        checkpoint: Any, kind: type[Exception], words: str) -> None:
    with LedgerSaver.from_url("memory://") as saver:
        with pytest.raises(kind, match=words):
            saver.put(thread_config("t"), checkpoint, {"source": "input", "step": -1}, {"a": 1})
        assert saver.get_tuple(thread_config("t")) is None


def test_the_async_put_refuses_what_is_no_checkpoint_alike() -> None:
    async def run() -> None:
        async with AsyncLedgerSaver.from_url("memory://") as saver:
            with pytest.raises(ValueError, match=r"^the checkpoint to put has no 'id'"):
                await saver.aput(thread_config("t"), _without("id"), {}, {})
            assert await saver.aget_tuple(thread_config("t")) is None
    asyncio.run(run())
