"""Migration of what langchain_community's RedisChatMessageHistory really wrote."""

from __future__ import annotations

import json
import uuid
import warnings
from collections.abc import Iterator

import pytest
import redis
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
)

from chatledger import Store
from chatledger.langchain import ChatLedgerHistory
from chatledger.langchain._migrate import MigrationReport, Undecodable, migrate_from_langchain

with warnings.catch_warnings():  # the package warns on import that it is being sunset
    warnings.simplefilter("ignore", DeprecationWarning)
    from langchain_community.chat_message_histories import RedisChatMessageHistory


@pytest.fixture
def prefix() -> str:
    """A key prefix of this test's own on the session's private redis-server."""
    return f"message_store:{uuid.uuid4().hex[:8]}:"


@pytest.fixture
def source(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def write(redis_url: str, prefix: str, session: str, messages: list[BaseMessage]
          ) -> RedisChatMessageHistory:
    old = RedisChatMessageHistory(session, url=redis_url, key_prefix=prefix)
    old.add_messages(messages)
    return old


SUPPORT = [
    SystemMessage("You are a support agent."),
    HumanMessage("Where is order 123? 🧾"),
    AIMessage("", id="run-1", tool_calls=[
        {"name": "lookup_order", "args": {"order": 123}, "id": "call-1"}],
        usage_metadata={"input_tokens": 9, "output_tokens": 4, "total_tokens": 13}),
    ToolMessage("shipped", tool_call_id="call-1", artifact={"eta": "monday"}),
    AIMessage("It has shipped.", id="run-2"),
]


def migrate(redis_url: str, prefix: str, store: Store, **options: object) -> MigrationReport:
    return migrate_from_langchain(redis_url, prefix, store, **options)  # type: ignore[arg-type]


def test_every_list_is_imported_in_order(redis_url: str, prefix: str, store: Store) -> None:
    old_a = write(redis_url, prefix, "user-a", SUPPORT)
    old_b = write(redis_url, prefix, "user-b", [HumanMessage("hi"), AIMessage("hello")])
    write(redis_url, "other_prefix:", "user-c", [HumanMessage("not mine")])
    report = migrate(redis_url, prefix, store)
    assert ChatLedgerHistory(store, "user-a").messages == old_a.messages == SUPPORT
    assert ChatLedgerHistory(store, "user-b").messages == old_b.messages
    assert sorted(store.sessions()) == ["user-a", "user-b"]
    assert (report.keys_found, report.sessions_imported, report.messages_imported) == (2, 2, 7)
    assert (report.messages_present, report.duplicates, report.undecodable) == (0, 0, [])
    assert not report.dry_run


def test_entries_written_by_older_langchain_versions_read_as_langchain_reads_them(
    redis_url: str, prefix: str, store: Store, source: redis.Redis
) -> None:
    """LangChain 0.x dumped every field, ``example`` included, which 1.x keeps as extra."""
    old_fields = {"additional_kwargs": {}, "response_metadata": {}, "name": None, "id": None,
                  "example": False}
    for entry in (
        {"type": "human", "data": {"content": "hi", "type": "human", **old_fields}},
        {"type": "ai", "data": {"content": "hello", "type": "ai", **old_fields,
                                "tool_calls": [], "invalid_tool_calls": [],
                                "usage_metadata": None}},
    ):
        source.lpush(f"{prefix}old", json.dumps(entry))
    migrate(redis_url, prefix, store)
    what_langchain_reads = RedisChatMessageHistory("old", url=redis_url, key_prefix=prefix)
    assert ChatLedgerHistory(store, "old").messages == what_langchain_reads.messages
    assert [m.content for m in what_langchain_reads.messages] == ["hi", "hello"]


def test_running_it_twice_imports_nothing_new(redis_url: str, prefix: str, store: Store) -> None:
    write(redis_url, prefix, "s", [*SUPPORT, HumanMessage("ok"), HumanMessage("ok")])
    first = migrate(redis_url, prefix, store)
    second = migrate(redis_url, prefix, store)
    assert (first.messages_imported, second.messages_imported) == (7, 0)
    assert (second.sessions_imported, second.messages_present) == (0, 7)
    assert store.session("s").read().version == 7  # both "ok"s, once each


def test_messages_written_after_a_migration_follow_on_the_next(
    redis_url: str, prefix: str, store: Store
) -> None:
    old = write(redis_url, prefix, "s", SUPPORT[:2])
    migrate(redis_url, prefix, store, batch_size=1)
    old.add_messages(SUPPORT[2:])
    report = migrate(redis_url, prefix, store, batch_size=2)
    assert (report.messages_imported, report.messages_present) == (3, 2)
    assert ChatLedgerHistory(store, "s").messages == SUPPORT


def test_a_dry_run_reports_and_writes_nothing(redis_url: str, prefix: str, store: Store) -> None:
    write(redis_url, prefix, "s", SUPPORT)
    report = migrate(redis_url, prefix, store, dry_run=True)
    assert (report.sessions_imported, report.messages_imported) == (1, 5)
    assert list(store.sessions()) == []
    assert report.summary().splitlines()[1] == "would import 5 messages into 1 session"


def test_entries_that_cannot_be_imported_are_reported_and_skipped(
    redis_url: str, prefix: str, store: Store, source: redis.Redis
) -> None:
    write(redis_url, prefix, "s", [HumanMessage("first")])
    key = f"{prefix}s"
    for bad in (b"not json", b"[1, 2]", json.dumps({"type": "alien", "data": {}}).encode(),
                json.dumps(message_to_dict(AIMessage("x", response_metadata={
                    "score": float("nan")}))).encode()):
        source.lpush(key, bad)
    write(redis_url, prefix, "s", [AIMessage("last")])
    report = migrate(redis_url, prefix, store)
    assert ChatLedgerHistory(store, "s").messages == [HumanMessage("first"), AIMessage("last")]
    # The list is newest first: "last" is index 0, the bad entries 1 to 4.
    assert [(entry.key, entry.index) for entry in report.undecodable] == [
        (key, 4), (key, 3), (key, 2), (key, 1)]
    reasons = [entry.reason for entry in report.undecodable]
    assert reasons[0].startswith("JSONDecodeError")
    assert reasons[1].startswith("TypeError")
    assert "alien" in reasons[2]
    assert reasons[3].startswith("cannot be stored exactly: message.metadata.langchain")
    assert f"{key} [4]: JSONDecodeError" in report.summary()


def test_a_message_stored_twice_by_a_retry_is_imported_once(
    redis_url: str, prefix: str, store: Store
) -> None:
    reply = AIMessage("shipped", id="run-1")
    write(redis_url, prefix, "s", [HumanMessage("where?"), reply, reply])
    report = migrate(redis_url, prefix, store)
    assert (report.messages_imported, report.duplicates) == (2, 1)
    assert ChatLedgerHistory(store, "s").messages == [HumanMessage("where?"), reply]


def test_keys_that_are_no_session_id_are_reported(
    redis_url: str, prefix: str, store: Store, source: redis.Redis
) -> None:
    entry = json.dumps(message_to_dict(HumanMessage("hi")))
    source.lpush(prefix.encode() + b"\xff", entry)  # not UTF-8
    source.lpush(prefix, entry)  # the empty session id
    source.set(f"{prefix}not-a-list", entry)  # not written by RedisChatMessageHistory
    report = migrate(redis_url, prefix, store)
    assert report.keys_found == 2
    assert sorted((entry.key, entry.index) for entry in report.undecodable) == [
        (prefix, None), (prefix + "\\xff", None)]
    assert all(entry.reason.startswith("not a usable session id") for entry in report.undecodable)
    assert list(store.sessions()) == []


def test_the_prefix_is_literal_not_a_pattern(redis_url: str, store: Store) -> None:
    prefix = f"ms*[{uuid.uuid4().hex[:6]}]?:"
    write(redis_url, prefix, "mine", [HumanMessage("hi")])
    write(redis_url, prefix.replace("*", "X").replace("?", "Y"), "lookalike", [HumanMessage("no")])
    report = migrate(redis_url, prefix, store)
    assert list(store.sessions()) == ["mine"]
    assert report.keys_found == 1


def test_progress_is_reported_per_list(redis_url: str, prefix: str, store: Store) -> None:
    for session in ("a", "b", "c"):
        write(redis_url, prefix, session, [HumanMessage(session)])
    calls: list[tuple[int, int]] = []
    migrate(redis_url, prefix, store, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 3), (2, 3), (3, 3)]


def test_the_report_reads_well(redis_url: str, prefix: str, store: Store) -> None:
    write(redis_url, prefix, "s", [HumanMessage("hi")])
    assert str(migrate(redis_url, prefix, store)) == "\n".join([
        "1 list found",
        "imported 1 message into 1 session",
        "0 messages already in chatledger",
        "0 duplicate entries skipped (an id seen earlier in the same list)",
        "0 entries could not be imported",
    ])
    assert str(Undecodable("k", None, "why")) == "k: why"
