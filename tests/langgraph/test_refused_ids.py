"""Ids LangGraph passes that the store could not hold (a NUL, a lone surrogate,
too long) are refused in LangGraph's terms, ``thread_id`` or ``task_id``, never
the saver's session ids, and nothing is stored."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from chatledger.langgraph import LedgerSaver, thread_config

LONE = "\ud83d"


def _config(thread: object, ns: str = "", checkpoint_id: str | None = None) -> Any:
    configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


@pytest.mark.parametrize(("config", "words"), [
    (_config(f"t{LONE}"), r"^thread_id 't\\ud83d' contains a lone surrogate"),
    (_config("a\x00b"), r"^thread_id 'a\\x00b' contains a NUL character"),
    (_config("x" * 1_100), r"^thread_id is 1,100 bytes of UTF-8, over 1,024"),
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
