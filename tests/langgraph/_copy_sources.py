"""LangGraph's own savers as sources for copy_threads, and the threads written on them.

Every source is a real saver on a real database (a SQLite file, a private
PostgreSQL, moto's DynamoDB), written by real graphs: a tool-calling agent, a
thread forked by time travel, one stopped at an interrupt, one stopped at an
interrupt inside a subgraph, and a long one.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import interrupt

from chatledger.testing._chat_turns import chat_graph
from tests.langgraph._graphs import agent_graph, approval_graph

SOURCES = ["memory", "sqlite", "postgres", "dynamodb"]
"""The savers a thread comes from; DynamoDBSaver is langgraph-checkpoint-aws's."""


@contextmanager
def source_saver(kind: str, request: Any, tmp_path: Any) -> Iterator[BaseCheckpointSaver[Any]]:
    """A LangGraph saver of ``kind`` on a database of this test's own."""
    if kind == "memory":
        yield InMemorySaver()
    elif kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(str(tmp_path / "langgraph.db")) as saver:
            yield saver
    elif kind == "postgres":
        yield from _postgres(request.getfixturevalue("postgres_server"))
    else:
        yield _dynamodb(request.getfixturevalue("dynamodb_server").endpoint_url)


def _postgres(server: Any) -> Iterator[BaseCheckpointSaver[Any]]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    database = f"lg_{secrets.token_hex(6)}"
    with psycopg.connect(server.url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {database}")
    url = server.url.rsplit("/", 1)[0] + f"/{database}"
    with PostgresSaver.from_conn_string(url) as saver:
        saver.setup()
        yield saver


def postgres_database_url(saver: Any) -> str:
    """The URL of the database a PostgresSaver opened (for the command's tests)."""
    info = saver.conn.info
    return f"postgresql://{info.user}@{info.host}:{info.port}/{info.dbname}"


def _dynamodb(endpoint_url: str) -> BaseCheckpointSaver[Any]:
    """DynamoDBSaver on a new table of its layout (PK, SK), on moto's server."""
    from langgraph_checkpoint_aws import DynamoDBSaver

    table = f"lg-{secrets.token_hex(6)}"
    client = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name="us-east-1")
    client.create_table(
        TableName=table, BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"},
                              {"AttributeName": "SK", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"},
                   {"AttributeName": "SK", "KeyType": "RANGE"}])
    return DynamoDBSaver(table, region_name="us-east-1", endpoint_url=endpoint_url)


def review_graph(checkpointer: BaseCheckpointSaver[Any] | None) -> Any:
    """A parent graph whose ``review`` node is a subgraph stopping at an interrupt:
    the subgraph's checkpoints live in a namespace of their own."""
    def check(state: MessagesState) -> dict[str, Any]:
        answer = interrupt({"question": "send it?"})
        return {"messages": [AIMessage(content=f"reviewer said {answer}")]}

    inner = StateGraph(MessagesState)
    inner.add_node("check", check)
    inner.add_edge(START, "check")

    def intake(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content="drafted")]}

    outer = StateGraph(MessagesState)
    outer.add_node("intake", intake)
    outer.add_node("review", inner.compile())
    outer.add_edge(START, "intake")
    outer.add_edge("intake", "review")
    return outer.compile(checkpointer=checkpointer)


THREADS = {"agent": agent_graph, "forked": agent_graph, "approval": approval_graph,
           "review": review_graph, "long": chat_graph}
"""Each thread this module writes, and the graph that runs it."""


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def write_threads(saver: BaseCheckpointSaver[Any], *, long_turns: int) -> None:
    """Write every thread of ``THREADS`` on ``saver``."""
    agent = agent_graph(saver)
    for text in ("my name is Ada", "where is order 7", "what is my name"):
        agent.invoke({"messages": [HumanMessage(text)]}, config("agent"))
    write_forked(saver)
    approval_graph(saver).invoke({"messages": [HumanMessage("refund")]}, config("approval"))
    review_graph(saver).invoke({"messages": [HumanMessage("write it")]}, config("review"))
    long = chat_graph(saver)
    for turn in range(long_turns):
        long.invoke({"items": [f"question {turn}"]}, config("long"))


def write_forked(saver: BaseCheckpointSaver[Any]) -> None:
    """Three turns, then time travel: an edit of the state after the first turn,
    run on from there, and a replay of the first turn's input checkpoint."""
    graph = agent_graph(saver)
    for text in ("my name is Ada", "order 5", "what is my name"):
        graph.invoke({"messages": [HumanMessage(text)]}, config("forked"))
    history = list(graph.get_state_history(config("forked")))
    after_first = next(s for s in history if len(s.values.get("messages", [])) == 2)
    edited = graph.update_state(after_first.config, {"messages": [HumanMessage("my name is Bo")]})
    graph.invoke({"messages": [HumanMessage("what is my name")]}, edited)
    first_input = history[-1]
    graph.invoke(None, first_input.config)
