"""Erasure through the integrations: a LangGraph thread tagged by its config's
``user_id`` and a LangChain history tagged with ``user=`` are what
``forget_user`` erases, and nothing else."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from chatledger import SessionUserError, open_store
from chatledger.langchain import ChatLedgerHistory
from chatledger.langgraph import AsyncLedgerSaver, LedgerSaver
from tests.erasure._raw import records
from tests.langgraph._graphs import agent_graph, texts


def _say(kind: str, url: str, namespace: str, config: Any, text: str) -> list[str]:
    """One turn of the agent on the sync or the async saver; the thread's texts."""
    if kind == "sync":
        with LedgerSaver.from_url(url, namespace=namespace) as saver:
            return texts(agent_graph(saver).invoke({"messages": [("user", text)]}, config))

    async def turn() -> list[str]:
        async with AsyncLedgerSaver.from_url(url, namespace=namespace) as saver:
            graph = agent_graph(saver)
            return texts(await graph.ainvoke({"messages": [("user", text)]}, config))

    return asyncio.run(turn())


def _thread_stored(url: str, namespace: str, thread: str) -> bool:
    with LedgerSaver.from_url(url, namespace=namespace) as saver:
        return saver.get_tuple({"configurable": {"thread_id": thread}}) is not None


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("name", ["sqlite", "redis", "cluster", "postgres"])
def test_a_users_threads_and_histories_are_forgotten(
        kind: str, name: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    base = {"sqlite": f"sqlite:///{tmp_path}/l.db"}.get(name) or request.getfixturevalue(
        f"{name}_url")
    namespace, tag = f"lg-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex[:8]
    alice, secret = f"alice-{tag}", f"order-{tag}"
    for thread, who in ((f"t-a-{tag}", alice), (f"t-b-{tag}", "bob")):
        config: Any = {"configurable": {"thread_id": thread, "user_id": who}}
        said = _say(kind, base, namespace, config, f"my name is {secret}")
        assert said[-1] == f"Noted: my name is {secret}"
    with pytest.raises(SessionUserError) as refused:  # a thread keeps its user
        _say(kind, base, namespace,
             {"configurable": {"thread_id": f"t-a-{tag}", "user_id": "mallory"}}, "hi")
    assert str(refused.value) == (  # in the checkpointer's words, not its layout's
        f"thread 't-a-{tag}' belongs to user {alice!r}, not 'mallory': its user is set by "
        "its first write and never changes; nothing was stored")
    with open_store(base, namespace=namespace) as store:
        ChatLedgerHistory(store, f"chat-{tag}", user=alice).add_messages(
            [HumanMessage(f"{secret} by chat")])
        bob_before = sorted(r for r in records(request, base) if b"t-b-" + tag.encode() in r)

        report = store.forget_user(alice)

        assert report.threads == (f"t-a-{tag}",)
        assert f"chat-{tag}" in report.deleted and report.sessions_deleted == 3
        after = records(request, base)
        assert not [r for r in after if alice.encode() in r or f"t-a-{tag}".encode() in r]
        assert sorted(r for r in after if b"t-b-" + tag.encode() in r) == bob_before
    assert not _thread_stored(base, namespace, f"t-a-{tag}")
    assert _thread_stored(base, namespace, f"t-b-{tag}")


def test_user_key_none_tags_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/l.db"
    with LedgerSaver.from_url(url, user_key=None) as saver:
        config: Any = {"configurable": {"thread_id": "t", "user_id": "alice"}}
        agent_graph(saver).invoke({"messages": [("user", "hi")]}, config)
        assert saver.store.forget_user("alice").deleted == ()


def test_the_async_saver_takes_user_key(tmp_path: Path) -> None:
    async def run() -> Any:
        async with AsyncLedgerSaver.from_url(f"sqlite:///{tmp_path}/a.db",
                                             user_key="tenant") as saver:
            config: Any = {"configurable": {"thread_id": "t", "tenant": "acme"}}
            await agent_graph(saver).ainvoke({"messages": [("user", "hi")]}, config)
            return await saver.store.forget_user("acme")

    assert asyncio.run(run()).threads == ("t",)


def test_a_copied_thread_belongs_to_the_source_threads_user(tmp_path: Path) -> None:
    with LedgerSaver.from_url(f"sqlite:///{tmp_path}/c.db") as saver:
        config: Any = {"configurable": {"thread_id": "t-src", "user_id": "gwen"}}
        agent_graph(saver).invoke({"messages": [("user", "hi")]}, config)
        saver.copy_thread("t-src", "t-copy")
        saver.copy_thread("t-none", "t-empty")  # no such thread: nothing copied
        report = saver.store.forget_user("gwen")
        assert sorted(report.threads) == ["t-copy", "t-src"]
        assert list(saver.store.sessions()) == []
