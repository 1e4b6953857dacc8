"""The support agent as it was written on the chat-history path: a hand-written
tool-calling loop whose memory is a chatledger session through ``ChatLedgerHistory``.

Kept as the migration example: LangChain deprecated ``BaseChatMessageHistory``
(and ``RunnableWithMessageHistory``) in favour of ``create_agent`` on LangGraph
persistence, which ``support_agent.agent`` is built on; the same model, tools
and ticketing service run under both, so the two read side by side.

Each customer message is one turn: read the conversation, let the model call
tools until it answers, then store the whole turn (the message, the tool calls,
their results and the answer) as one atomic append. When memory cannot be
read, the agent says so instead of treating a returning customer as new.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from chatledger import BackendUnavailable, MemoryLostError, Store
from chatledger.langchain import ChatLedgerHistory

from ..model import ScriptedSupportModel
from ..tickets import TicketingService
from ..tools import make_tools
from .memory import summarize_facts

MEMORY_UNAVAILABLE = ("I'm sorry, I can't reach our conversation history right now, so I "
                      "can't pick up where we left off. Please try again in a minute.")
NOT_SAVED = " (I couldn't save this part of our conversation: please remind me if needed.)"
_MAX_STEPS = 6  # a complaint: lookup, shipment, remedy, ticket, then the answer


class SupportAgent:
    """Answers customers, one session per customer, in ``store``."""

    def __init__(self, store: Store, service: TicketingService | None = None, *,
                 max_tokens: int | None = None) -> None:
        """With ``max_tokens``, the model is given the latest summary and the newest
        messages within that budget, and old turns are summarized as they age."""
        self.store = store
        self.max_tokens = max_tokens
        self.service = service or TicketingService()
        self.tools = {tool.name: tool for tool in make_tools(self.service)}
        self.model = ScriptedSupportModel().bind_tools(list(self.tools.values()))

    def handle(self, customer: str, text: str) -> str:
        """The agent's answer to ``text`` from ``customer``."""
        history = ChatLedgerHistory(self.store, customer, max_tokens=self.max_tokens,
                                    with_summary=self.max_tokens is not None)
        try:
            past = history.messages
        except (BackendUnavailable, MemoryLostError):
            return MEMORY_UNAVAILABLE
        # An id of its own makes the turn safe to store again after a lost reply.
        turn: list[BaseMessage] = [HumanMessage(text, id=str(uuid.uuid4()))]
        answer = self._think(past, turn)
        try:
            history.add_messages(turn)
            self._compact(customer)
        except (BackendUnavailable, MemoryLostError):
            return answer + NOT_SAVED
        return answer

    def _compact(self, customer: str) -> None:
        """Summarize the old turns once the unsummarized ones fill half the budget,
        so the summary and everything after it always fit the next read."""
        if self.max_tokens is not None:
            self.store.session(customer).maybe_compact(
                summarize_facts, trigger_tokens=self.max_tokens // 2,
                keep_tokens=self.max_tokens // 4)

    def _think(self, past: list[BaseMessage], turn: list[BaseMessage]) -> str:
        for _ in range(_MAX_STEPS):
            reply = self.model.invoke(past + turn)
            turn.append(reply)
            calls: list[dict[str, Any]] = getattr(reply, "tool_calls", [])
            if not calls:
                return str(reply.content)
            turn.extend(self._run(call) for call in calls)
        raise RuntimeError("the model kept calling tools")

    def _run(self, call: dict[str, Any]) -> ToolMessage:
        result = self.tools[call["name"]].invoke(call["args"])
        return ToolMessage(json.dumps(result), tool_call_id=call["id"], name=call["name"])
