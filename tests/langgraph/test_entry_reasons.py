"""The reason a damaged checkpoint entry is refused with says what is wrong with
it: a kind no entry has is named as such (not as a missing field), and a record
whose fields have the wrong shape is a CorruptEntryError, not a bare Python error."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from langgraph.checkpoint.base import CheckpointMetadata, empty_checkpoint

from chatledger import CorruptEntryError, system
from chatledger.langgraph import LedgerSaver
from chatledger.langgraph._entries import FORMAT
from chatledger.langgraph._layout import session_id

CONFIG: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def _refused(saver: LedgerSaver, metadata: dict[str, Any], data: bytes | None) -> str:
    """The reason the saver gives for a newest entry stored with ``metadata``."""
    saver.store.session(session_id("t", "")).append(
        [system("damaged", metadata={"langgraph": FORMAT, **metadata}, data=data)])
    with pytest.raises(CorruptEntryError) as caught:
        saver.get_tuple(CONFIG)
    return caught.value.reason


def _saver_with_a_checkpoint() -> tuple[LedgerSaver, dict[str, Any], bytes | None]:
    """A saver holding one checkpoint, and its entry's metadata and data as stored."""
    saver = LedgerSaver.from_url(f"memory://{uuid.uuid4().hex}")
    md: CheckpointMetadata = {"source": "loop", "step": 0}  # type: ignore[typeddict-item]
    saver.put(CONFIG, empty_checkpoint(), md, {})
    (stored,) = [m for m in saver.store.session(session_id("t", "")).read().messages
                 if m.metadata.get("kind") == "CheckpointEntry"]
    return saver, dict(stored.metadata), stored.data


@pytest.mark.parametrize("kind", ["Bogus", "checkpoint", ["CheckpointEntry"]])
def test_an_entry_of_a_kind_no_entry_has_is_named_by_its_kind(kind: Any) -> None:
    saver, metadata, data = _saver_with_a_checkpoint()
    with saver:
        reason = _refused(saver, {**metadata, "kind": kind}, data)
    assert reason == f"not a checkpoint ledger entry: unknown kind {str(kind)!r}"
    assert "no field" not in reason


def test_an_entry_without_a_kind_names_the_missing_field() -> None:
    saver, metadata, data = _saver_with_a_checkpoint()
    del metadata["kind"]
    with saver:
        reason = _refused(saver, metadata, data)
    assert reason == "not a checkpoint ledger entry: its record has no field 'kind'"


@pytest.mark.parametrize("field", ["carried", "chains"])
def test_a_field_that_is_no_mapping_is_a_damaged_entry(field: str) -> None:
    saver, metadata, data = _saver_with_a_checkpoint()
    with saver:
        reason = _refused(saver, {**metadata, field: ["not", "a", "mapping"]}, data)
    assert reason.startswith("not a checkpoint ledger entry: ")


def test_a_malformed_parts_pointer_names_its_own_entry_not_the_window_s_first() -> None:
    saver, metadata, data = _saver_with_a_checkpoint()
    with saver:
        md: CheckpointMetadata = {"source": "loop", "step": 1}  # type: ignore[typeddict-item]
        saver.put(CONFIG, empty_checkpoint(), md, {})
        session = saver.store.session(session_id("t", ""))
        before = session.info()
        assert before is not None and before.version > 1  # the window starts before it
        session.append([system("damaged", metadata={**metadata, "parts": "x"}, data=data)])
        with pytest.raises(CorruptEntryError) as caught:
            saver.get_tuple(CONFIG)
    assert caught.value.seq == before.version + 1
    assert caught.value.reason == "an entry's parts are 'x'"
