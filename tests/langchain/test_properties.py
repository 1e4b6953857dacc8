"""Property: any LangChain message of JSON values comes back from the ledger equal."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from chatledger import Store, open_store
from chatledger.langchain import ChatLedgerHistory, from_ledger, to_ledger

INT64 = st.integers(-(2**63), 2**63 - 1)
keys = st.text(max_size=8)
json_values = st.recursive(
    st.none() | st.booleans() | INT64 | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=10,
)
objects = st.dictionaries(keys, json_values, max_size=3)
blocks = st.text(max_size=10) | objects
content = st.text() | st.lists(blocks, max_size=3)
optional_text = st.none() | st.text(max_size=10)
# "" is no id in LangChain's eyes; it must come back as "" all the same.
ids = st.none() | st.just("") | st.text(min_size=1, max_size=12)

common = {
    "content": content,
    "id": ids,
    "name": optional_text,
    "additional_kwargs": objects,
    "response_metadata": objects,
}
tool_calls = st.lists(st.fixed_dictionaries(
    {"name": st.text(max_size=8), "args": objects, "id": optional_text}), max_size=2)
invalid_tool_calls = st.lists(st.fixed_dictionaries(
    {"name": optional_text, "args": optional_text, "id": optional_text,
     "error": optional_text, "type": st.just("invalid_tool_call")}), max_size=2)
usage = st.none() | st.fixed_dictionaries(
    {"input_tokens": INT64, "output_tokens": INT64, "total_tokens": INT64},
    optional={"input_token_details": st.fixed_dictionaries({}, optional={"cache_read": INT64})},
)
tool_call_chunks = st.lists(st.fixed_dictionaries(
    {"name": optional_text, "args": optional_text, "id": optional_text,
     "index": st.none() | st.integers(0, 5)}), max_size=2)

messages: st.SearchStrategy[BaseMessage] = st.one_of(
    st.builds(HumanMessage, **common),
    st.builds(SystemMessage, **common),
    st.builds(AIMessage, **common, tool_calls=tool_calls, invalid_tool_calls=invalid_tool_calls,
              usage_metadata=usage),
    st.builds(AIMessageChunk, **common, tool_call_chunks=tool_call_chunks,
              chunk_position=st.sampled_from([None, "last"]), usage_metadata=usage),
    st.builds(ToolMessage, **common, tool_call_id=st.text(min_size=1, max_size=10),
              artifact=json_values, status=st.sampled_from(["success", "error"])),
    st.builds(ChatMessage, **common, role=st.text(max_size=10)),
    st.builds(FunctionMessage, **{**common, "name": st.text(min_size=1, max_size=10)}),
)
# The ids of one batch must differ (the ledger refuses a repeat); no id repeats freely.
batches = st.lists(messages, min_size=1, max_size=4,
                   unique_by=lambda message: message.id or uuid.uuid4().hex)


@pytest.fixture(scope="module", params=["memory", "sqlite"])
def ledger(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[Store]:
    url = ("memory://properties" if request.param == "memory"
           else f"sqlite:///{tmp_path_factory.mktemp('properties')}/ledger.db")
    with open_store(url) as store:
        yield store


# The mapping to and from LangChain's messages is the same whatever the store: its full run
# is on memory; on SQLite a share checks it through stored bytes (which the contract's own
# round-trip property checks on every backend).
EXAMPLES = {"memory": 150, "sqlite": 30}


def test_every_message_comes_back_equal(ledger: Store, request: pytest.FixtureRequest) -> None:
    @settings(max_examples=EXAMPLES[request.node.callspec.params["ledger"]], deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(batch=batches)
    def check(batch: list[BaseMessage]) -> None:
        session = uuid.uuid4().hex
        ChatLedgerHistory(ledger, session).add_messages(batch)
        assert ChatLedgerHistory(ledger, session).messages == batch
        assert [from_ledger(to_ledger(message), session) for message in batch] == batch

    check()
