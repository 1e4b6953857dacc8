"""What does TranscriptMiddleware add to a LangChain v1 agent's turn?

Two ``create_agent`` agents on one store, the same scripted model (no network)
and tool, both checkpointed by ``LedgerSaver``; one also has
``TranscriptMiddleware`` on the same store. A turn is the customer's message, a
tool call, its result and the answer (two model calls, four messages), as
``invoke`` on a thread of its own per agent. The two agents take turns, turn
for turn, so that drift favours neither; it prints the median and 90th
percentile of a turn and the ratio transcript / plain. What the middleware does
per turn: two agent hooks (``before_agent``, ``after_agent``: two more graph
steps, so two more checkpoints) and one append per hook or model call that has
something new (three here). A measurement report, not a test: it exits 0.

Backends: ``memory://``, SQLite in a temporary directory and a private
``redis-server`` (``chatledger.testing.RedisServer``). Run it from the
repository root::

    python benchmarks/transcript_cost.py            # 200 timed turns per agent
    python benchmarks/transcript_cost.py --quick    # 40
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _report import environment, median_us, p90_us, parse_args, print_header
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from chatledger import Store, open_store
from chatledger.langchain import TranscriptMiddleware
from chatledger.langgraph import LedgerSaver
from chatledger.testing import RedisServer

WARMUP = 5


class ToolThenAnswer(BaseChatModel):
    """Calls the tool about the customer's words, then answers with its result."""

    @property
    def _llm_type(self) -> str:
        return "tool-then-answer"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolThenAnswer:
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        last = messages[-1]
        if isinstance(last, ToolMessage):
            reply = AIMessage(f"Order status: {last.content}")
        else:
            reply = AIMessage("", tool_calls=[{"id": f"c{len(messages)}", "name": "order_status",
                                               "args": {"question": str(last.content)}}])
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def order_status(question: str) -> str:
    """The status of the order the customer asks about."""
    return "shipped, arriving Friday"


def agents(store: Store) -> dict[str, Any]:
    def agent(*middleware: Any) -> Any:
        return create_agent(ToolThenAnswer(), [order_status], middleware=middleware,
                            checkpointer=LedgerSaver(store))
    return {"plain": agent(), "transcript": agent(TranscriptMiddleware(store))}


def measure(url: str, turns: int) -> dict[str, list[int]]:
    """Nanoseconds per turn of each agent, the two interleaved."""
    samples: dict[str, list[int]] = {"plain": [], "transcript": []}
    with open_store(url, namespace=f"bench-{time.time_ns()}") as store:
        built = agents(store)
        for number in range(WARMUP + turns):
            for name, agent in built.items():
                config = {"configurable": {"thread_id": f"{name}-thread"}}
                started = time.perf_counter_ns()
                agent.invoke({"messages": [HumanMessage(f"where is order {number}?")]}, config)
                if number >= WARMUP:
                    samples[name].append(time.perf_counter_ns() - started)
    return samples


def report(label: str, samples: dict[str, list[int]]) -> None:
    plain, transcript = (median_us(samples[name]) for name in ("plain", "transcript"))
    print(f"{label:<12} plain {plain / 1000:7.2f} ms (p90 {p90_us(samples['plain']) / 1000:7.2f})"
          f"   transcript {transcript / 1000:7.2f} ms "
          f"(p90 {p90_us(samples['transcript']) / 1000:7.2f})   ratio {transcript / plain:.2f}x, "
          f"+{(transcript - plain) / 1000:.1f} ms")


def main(argv: list[str] | None = None) -> int:
    turns, _ = parse_args(argv, __doc__, quick=40, full=200,
                          quick_help="40 timed turns per agent instead of 200", check=False)
    print_header("TranscriptMiddleware: cost per agent turn (median)",
                 [*environment(), ("turns", f"{turns} per agent, after {WARMUP} warm-up")])
    with tempfile.TemporaryDirectory() as directory, RedisServer() as server:
        urls = {"memory": "memory://", "sqlite": f"sqlite:///{Path(directory)}/bench.db",
                "redis": server.url}
        for label, url in urls.items():
            report(label, measure(url, turns))
    return 0


if __name__ == "__main__":
    sys.exit(main())
