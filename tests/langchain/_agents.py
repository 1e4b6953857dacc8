"""A small LangChain v1 agent for the transcript tests: a rule-based chat model
(no network), one tool, and a summarizer model that says what it folded."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.types import Command


class RuleModel(BaseChatModel):
    """Asks the tool about the customer's last words, then answers with its result.

    ``fail_on`` makes the call whose last message has that content raise once:
    a model call that failed after the transcript stored what came before it.
    """

    fail_on: str | None = None

    @property
    def _llm_type(self) -> str:
        return "rule-model"

    def bind_tools(self, tools: Any, **kwargs: Any) -> RuleModel:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        last = messages[-1]
        if self.fail_on is not None and last.content == self.fail_on:
            self.fail_on = None  # once
            raise RuntimeError("the model provider timed out")
        if isinstance(last, ToolMessage):
            reply = AIMessage(f"Here is what I found: {last.content}")
        else:
            name = "cancel_order" if "cancel" in str(last.content) else "lookup_order"
            call = {"id": f"call-{len(messages)}", "name": name,
                    "args": {"question": str(last.content)}, "type": "tool_call"}
            reply = AIMessage("", tool_calls=[call])
        return ChatResult(generations=[ChatGeneration(message=reply)])


class Summarizer(BaseChatModel):
    """The summary a summarizing model would write, the same every time."""

    @property
    def _llm_type(self) -> str:
        return "summarizer"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        reply = AIMessage("The customer asked about their orders; all shipped.")
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def lookup_order(question: str) -> str:
    """Look up the order the customer asks about."""
    return f"order status for {question!r}: shipped"


@tool(return_direct=True)
def cancel_order(question: str) -> str:
    """Cancel the order; its result is the agent's answer."""
    return f"cancelled: {question}"


def turn(text: str, index: int) -> dict[str, Any]:
    """The input of one turn: the customer's message with an id of its own."""
    return {"messages": [HumanMessage(text, id=f"human-{index}")]}


@tool(response_format="content_and_artifact")
def screenshot(question: str) -> tuple[str, bytes]:
    """A screenshot of the order page: bytes, as a tool's artifact."""
    return "took a screenshot", b"\x89PNG\r\n\x1a\n\x00"


@tool("lookup_order", response_format="content_and_artifact")
def lookup_with_a_set(question: str) -> tuple[str, Any]:
    """An artifact JSON cannot hold (a set)."""
    return "found", {"orders": {1, 2}}


@tool("lookup_order")
def lookup_as_a_command(question: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
    """A result given as a Command, its message holding what JSON cannot (a set)."""
    return Command(update={"messages": [ToolMessage("found", tool_call_id=tool_call_id,
                                                    artifact={"orders": {1, 2}})]})


@tool("lookup_order")
def lookup_as_a_command_of_dicts(question: str,
                                 tool_call_id: Annotated[str, InjectedToolCallId]) -> Any:
    """The same, its message a dict, as add_messages takes it."""
    message = {"type": "tool", "content": "found", "tool_call_id": tool_call_id,
               "artifact": {"orders": {1, 2}}}
    return Command(update={"messages": [message]})
