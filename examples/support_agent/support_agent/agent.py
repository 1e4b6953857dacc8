"""The support agent on LangChain v1: ``create_agent`` with chatledger's
checkpointer, one LangGraph thread per customer.

The model looks orders up, checks shipments, decides a refund or a replacement
from the order's status and opens a ticket recording it (``model.py``), with
tools over a stub ticketing service (``tools.py``, ``tickets.py``). Memory is
the thread's checkpoints in ``LedgerSaver``; ``SummarizationMiddleware`` keeps
the state the model sees short, and ``TranscriptMiddleware`` keeps every
message of every turn in a session of the same store (``chatledger show
CUSTOMER``), summarized or not.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.messages import HumanMessage

from chatledger import Store
from chatledger.langchain import TranscriptMiddleware
from chatledger.langgraph import LedgerSaver, ThreadRuns, latest_checkpoint_id, thread_config

from .model import ScriptedSupportModel
from .summary import summarize_facts
from .tickets import TicketingService
from .tools import make_tools

SYSTEM_PROMPT = ("You are a customer-support agent. Look orders up before acting on them; "
                 "refund what was not delivered, replace what arrived damaged, and open a "
                 "ticket recording what you did.")


def build_agent(store: Store, service: TicketingService, *, summarize_at: int = 40,
                keep: int = 10) -> Any:
    """The compiled agent: its checkpoints and its transcript in ``store``; the
    state summarized once it holds ``summarize_at`` messages, keeping ``keep``."""
    return create_agent(
        ScriptedSupportModel(), make_tools(service), system_prompt=SYSTEM_PROMPT,
        checkpointer=LedgerSaver(store),
        middleware=[
            TranscriptMiddleware(store),  # first: it sees each message before any rewrite
            SummarizationMiddleware(ScriptedSupportModel(), summarizer=summarize_facts,
                                    trigger=("messages", summarize_at), keep=("messages", keep)),
        ])


class SupportAgent:
    """Answers customers, one thread per customer, in ``store``.

    What production needs of it, each in a line: a web service keeps, beside
    each conversation, the id of the latest checkpoint it saw (``known``) and
    states it every turn, so a thread whose memory was lost raises
    ``CheckpointLost`` instead of greeting a returning customer as new; turns
    run through ``ThreadRuns``, so two requests of one customer at once (a
    double text, two pods) follow ``multitask_strategy``: ``"enqueue"`` runs
    the second after the first, on its result, ``"reject"`` refuses it with
    ``ThreadBusy`` before any model or tool call.
    """

    def __init__(self, store: Store, service: TicketingService | None = None, *,
                 multitask_strategy: str = "enqueue", summarize_at: int = 40,
                 keep: int = 10) -> None:
        self.store = store
        self.service = service or TicketingService()
        self.graph = build_agent(store, self.service, summarize_at=summarize_at, keep=keep)
        self.runs = ThreadRuns(self.graph, multitask_strategy=multitask_strategy)
        self.known: dict[str, str] = {}

    def handle(self, customer: str, text: str) -> str:
        """The agent's answer to ``text`` from ``customer``."""
        config = self.config(customer)
        result = self.runs.invoke({"messages": [HumanMessage(text)]}, config)
        self.known[customer] = str(latest_checkpoint_id(self.graph, config))
        return str(result["messages"][-1].content)

    def config(self, customer: str) -> Any:
        """The config of a turn of ``customer``: their thread, and what we knew of it."""
        return thread_config(customer, self.known.get(customer))
