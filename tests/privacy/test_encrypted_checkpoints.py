"""The LangGraph saver on an encrypted store: checkpoints are sealed too."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from chatledger import EncryptionKeyError, Keyring
from chatledger.langgraph import LedgerSaver


class State(TypedDict):
    note: str


def test_a_graphs_state_is_stored_sealed_and_comes_back(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    url = f"sqlite:///{tmp_path}/g.db"
    keyring = Keyring({"k1": Keyring.new_key()}, current="k1")
    builder = StateGraph(State)
    builder.add_node("write", lambda state: {"note": f"{state['note']} {marker}"})
    builder.add_edge(START, "write")
    builder.add_edge("write", END)
    config = {"configurable": {"thread_id": "t1"}}
    with LedgerSaver.from_url(url, encryption=keyring) as saver:
        graph = builder.compile(checkpointer=saver)
        graph.invoke({"note": "card 4111"}, config)
        assert graph.get_state(config).values["note"] == f"card 4111 {marker}"
    stored = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    assert marker.encode() not in stored and b"4111" not in stored
    with LedgerSaver.from_url(url) as without_key, pytest.raises(EncryptionKeyError):
        builder.compile(checkpointer=without_key).get_state(config)
