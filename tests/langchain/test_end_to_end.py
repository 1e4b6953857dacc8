"""LangChain itself, on a fake chat model from langchain_core, remembering through chatledger."""

from __future__ import annotations

import asyncio
import json
import operator
import os
import subprocess
import sys
from functools import reduce
from pathlib import Path
from typing import Any

import pytest
from langchain_classic.chains import ConversationChain
from langchain_classic.memory import ConversationBufferMemory
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import (
    FakeListChatModel,
    FakeMessagesListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    messages_from_dict,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import Runnable
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_core.tools import tool

import chatledger
from chatledger import open_async_store, open_store
from chatledger.langchain import ChatLedgerHistory

# langchain-classic's memory classes are deprecated by LangChain: expected here.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


class PromptRecorder(BaseCallbackHandler):
    """What the chat model was sent, call by call."""

    def __init__(self) -> None:
        self.prompts: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized: Any, messages: list[list[BaseMessage]],
                            **kwargs: Any) -> None:
        self.prompts.extend(messages)


def support_chain(model: Runnable[Any, Any]) -> Runnable[Any, Any]:
    prompt = ChatPromptTemplate.from_messages([
        ("system", "You are a support agent."),
        MessagesPlaceholder("history"),
        ("human", "{question}"),
    ])
    return prompt | model


def texts(messages: list[BaseMessage]) -> list[tuple[str, Any]]:
    return [(message.type, message.content) for message in messages]


def test_runnable_with_message_history(url: str) -> None:
    recorder = PromptRecorder()
    model = FakeListChatModel(responses=["Hi Ada!", "You are Ada, order 123."])
    chain = RunnableWithMessageHistory(
        support_chain(model),
        lambda session_id: ChatLedgerHistory.from_url(url, session_id),  # the whole change
        input_messages_key="question",
        history_messages_key="history",
    )
    config: Any = {"configurable": {"session_id": "ada"}, "callbacks": [recorder]}
    chain.invoke({"question": "I am Ada, order 123."}, config=config)
    answer = chain.invoke({"question": "Who am I?"}, config=config)
    assert answer.content == "You are Ada, order 123."
    assert texts(recorder.prompts[1]) == [
        ("system", "You are a support agent."),
        ("human", "I am Ada, order 123."), ("ai", "Hi Ada!"), ("human", "Who am I?"),
    ]
    with open_store(url) as store:  # a turn is one batch: two turns, version 4
        assert store.session("ada").read().version == 4
        assert [m.role for m in store.session("ada").read().messages] == [
            "user", "assistant", "user", "assistant"]


def test_runnable_with_message_history_async(url: str) -> None:
    recorder = PromptRecorder()

    async def conversation() -> None:
        async with await open_async_store(url) as astore:
            chain = RunnableWithMessageHistory(
                support_chain(FakeListChatModel(responses=["Hi Ada!", "You are Ada."])),
                lambda session_id: ChatLedgerHistory(astore, session_id),
                input_messages_key="question",
                history_messages_key="history",
            )
            config: Any = {"configurable": {"session_id": "ada"}, "callbacks": [recorder]}
            await chain.ainvoke({"question": "I am Ada."}, config=config)
            await chain.ainvoke({"question": "Who am I?"}, config=config)

    asyncio.run(conversation())
    assert texts(recorder.prompts[1][1:]) == [
        ("human", "I am Ada."), ("ai", "Hi Ada!"), ("human", "Who am I?")]
    assert texts(ChatLedgerHistory.from_url(url, "ada").messages) == [
        ("human", "I am Ada."), ("ai", "Hi Ada!"), ("human", "Who am I?"), ("ai", "You are Ada.")]


def test_runnable_with_message_history_streaming(url: str) -> None:
    model = GenericFakeChatModel(messages=iter(["Order 123 ships today.", "It left at noon."]))
    chain = RunnableWithMessageHistory(
        support_chain(model),
        lambda session_id: ChatLedgerHistory.from_url(url, session_id),
        input_messages_key="question",
        history_messages_key="history",
    )
    config: Any = {"configurable": {"session_id": "s"}}
    chunks = list(chain.stream({"question": "Where is order 123?"}, config=config))
    assert len(chunks) > 1

    async def stream_again() -> list[Any]:
        return [chunk async for chunk in chain.astream({"question": "When?"}, config=config)]

    more = asyncio.run(stream_again())
    stored = ChatLedgerHistory.from_url(url, "s").messages
    assert stored[1] == reduce(operator.add, chunks)  # the streamed reply, exactly
    assert stored[3] == reduce(operator.add, more)
    assert isinstance(stored[1], AIMessageChunk)
    assert texts(stored) == [("human", "Where is order 123?"),
                             ("AIMessageChunk", "Order 123 ships today."),
                             ("human", "When?"), ("AIMessageChunk", "It left at noon.")]


def test_conversation_buffer_memory_with_conversation_chain(url: str) -> None:
    recorder = PromptRecorder()
    memory = ConversationBufferMemory(chat_memory=ChatLedgerHistory.from_url(url, "c"))
    chain = ConversationChain(
        llm=FakeListChatModel(responses=["Hello Ada!", "You are Ada."]), memory=memory,
    )
    config: Any = {"callbacks": [recorder]}
    chain.invoke({"input": "Hi, I am Ada."}, config=config)
    assert chain.invoke({"input": "Who am I?"}, config=config)["response"] == "You are Ada."
    assert "Human: Hi, I am Ada.\nAI: Hello Ada!" in str(recorder.prompts[1][0].content)
    # A new memory (a new process, a new pod) on the same session remembers.
    reloaded = ConversationBufferMemory(chat_memory=ChatLedgerHistory.from_url(url, "c"))
    assert reloaded.load_memory_variables({})["history"] == (
        "Human: Hi, I am Ada.\nAI: Hello Ada!\nHuman: Who am I?\nAI: You are Ada.")


@tool(response_format="content_and_artifact")
def lookup_order(order: int) -> tuple[str, dict[str, Any]]:
    """Look up an order's shipping status."""
    return f"Order {order} has shipped.", {"order": order, "status": "shipped", "eta": None}


RELOAD = """
import json, sys
from langchain_core.messages import messages_to_dict
from chatledger.langchain import ChatLedgerHistory
print(json.dumps(messages_to_dict(ChatLedgerHistory.from_url(sys.argv[1], "agent").messages)))
"""


def read_in_a_fresh_process(url: str) -> list[BaseMessage]:
    source = str(Path(chatledger.__file__).parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", RELOAD, url], env=env, capture_output=True,
                          text=True, check=True, timeout=120)
    return messages_from_dict(json.loads(done.stdout))


def test_a_tool_calling_loop_survives_a_reload_in_a_fresh_process(url: str) -> None:
    model = FakeMessagesListChatModel(responses=[
        AIMessage("", id="run-1", tool_calls=[
            {"name": "lookup_order", "args": {"order": 123}, "id": "call-1"}]),
        AIMessage("Order 123 has shipped.", id="run-2"),
    ])
    history = ChatLedgerHistory.from_url(url, "agent")
    history.add_messages([HumanMessage("Where is order 123?")])
    while True:
        reply = model.invoke(history.messages)
        results = [lookup_order.invoke(call) for call in reply.tool_calls]
        history.add_messages([reply, *results])
        if not reply.tool_calls:
            break

    reloaded = read_in_a_fresh_process(url)
    assert reloaded == history.messages
    _, call, result, answer = reloaded
    assert isinstance(call, AIMessage)
    assert call.tool_calls == [{"name": "lookup_order", "args": {"order": 123}, "id": "call-1",
                                "type": "tool_call"}]
    assert isinstance(result, ToolMessage)
    assert (result.tool_call_id, result.content, result.artifact) == (
        "call-1", "Order 123 has shipped.", {"order": 123, "status": "shipped", "eta": None})
    assert answer.content == "Order 123 has shipped."
