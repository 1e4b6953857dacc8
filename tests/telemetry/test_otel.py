"""OpenTelemetry: a CLIENT span per store call, with the database client
conventions' attributes, and the operation metrics; read back from the SDK's
in-memory span exporter and metric reader."""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
from pathlib import Path

import pytest
import redis
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from chatledger import (
    ConfigError,
    ConflictError,
    EncryptionKeyError,
    InvalidMessage,
    Keyring,
    MemoryLostError,
    RetryPolicy,
    assistant,
    open_async_store,
    open_store,
    user,
)
from chatledger._telemetry.outcome import Where
from chatledger._url import parse_url
from chatledger.testing import FaultProxy, RedisServer
from tests.backends import BackendCase
from tests.telemetry.conftest import Telemetry, flat

SECRET = "the secret of order 123"
SYSTEMS = {"memory": "chatledger.memory", "sqlite": "sqlite", "redis": "redis",
           "sentinel": "redis", "cluster": "redis", "postgres": "postgresql",
           "dynamodb": "aws.dynamodb"}


def test_every_call_is_a_client_span_with_the_conventions_attributes(
    backend: BackendCase, ledger_url: str, telemetry: Telemetry, request: pytest.FixtureRequest,
) -> None:
    store = backend.open(ledger_url, namespace=telemetry.namespace, tracing=True,
                         retry=RetryPolicy.none())
    request.addfinalizer(store.close)
    session = store.session("user-42")
    session.append([user(SECRET), assistant(SECRET)])
    session.read(last=5)
    session.info()
    session.trim(keep_last=1)
    assert list(store.sessions(prefix="user-")) == ["user-42"]
    session.delete()
    store.purge(prefix="user-")

    spans = telemetry.spans()
    operations = ["append", "read", "info", "trim", "list_sessions", "delete", "purge"]
    # A cluster lists its sessions node by node: a list_sessions span per page.
    names = [name for name, _ in itertools.groupby(span.name for span in spans)]
    assert names == [f"{op} {telemetry.namespace}" for op in operations]
    assert {span.kind for span in spans} == {SpanKind.CLIENT}
    system = SYSTEMS[backend.name.removesuffix("-async")]
    for span in spans:
        attributes = dict(span.attributes or {})
        assert attributes["db.system.name"] == attributes["db.system"] == system
        assert span.name == f"{attributes['db.operation.name']} {telemetry.namespace}"
        assert attributes["chatledger.outcome"] == "ok"
        assert span.status.status_code is StatusCode.UNSET
        assert span.start_time is not None and span.end_time is not None
        assert span.start_time <= span.end_time
        host = parse_url(ledger_url).hosts[:1]
        assert [(attributes.get("server.address"), attributes.get("server.port"))] == (
            host or [(None, None)])
    assert dict(spans[0].attributes or {})["chatledger.session.id"] == "user-42"
    assert dict(spans[4].attributes or {})["chatledger.prefix"] == "user-"
    assert dict(spans[-1].attributes or {})["chatledger.prefix"] == "user-"
    assert SECRET not in flat(spans)


def test_a_store_call_nests_under_the_callers_span(
    telemetry: Telemetry, tracer: trace.Tracer
) -> None:
    with open_store("memory://", namespace=telemetry.namespace, tracing=True) as store, \
            tracer.start_as_current_span("turn") as turn:
        store.session("s").append([user("hi")])
        store.session("s").read(last=5)
    spans = telemetry.spans()
    assert len(spans) == 2
    assert {span.parent.span_id for span in spans if span.parent} == {
        turn.get_span_context().span_id}
    assert {span.context.trace_id for span in spans} == {turn.get_span_context().trace_id}


def test_an_async_store_call_nests_under_the_callers_span(
    telemetry: Telemetry, tracer: trace.Tracer
) -> None:
    async def turn() -> int:
        store = await open_async_store("memory://", namespace=telemetry.namespace,
                                       tracing=True)
        async with store:
            with tracer.start_as_current_span("turn") as span:
                await store.session("s").append([user("hi")])
                return span.get_span_context().span_id

    parent = asyncio.run(turn())
    [span] = telemetry.spans()
    assert span.parent is not None and span.parent.span_id == parent


def test_a_retried_append_whose_reply_was_lost_shows_the_retry_and_the_deduplication(
    redis_server: RedisServer, telemetry: Telemetry
) -> None:
    with FaultProxy(redis_server.host, redis_server.port) as proxy, open_store(
        f"redis://{proxy.url_netloc}/0", namespace=telemetry.namespace, tracing=True,
        retry=RetryPolicy(attempts=5, deadline=10.0),
    ) as store:
        session = store.session("s")
        session.append([user("warm up")])
        proxy.lose_next_reply()
        ack = session.append([user(SECRET)])
    assert ack.deduplicated
    first, retried = telemetry.spans()
    attributes = dict(retried.attributes or {})
    assert (attributes["server.address"], attributes["server.port"]) == (proxy.host, proxy.port)
    assert attributes["chatledger.attempts"] == 2
    assert attributes["chatledger.outcome"] == "deduplicated"
    assert attributes["chatledger.append.deduplicated"] is True
    [retry, deduplicated] = retried.events
    assert (retry.name, dict(retry.attributes or {})) == (
        "chatledger.retry", {"chatledger.attempt": 1, "error.type": "BackendUnavailable"})
    assert retried.start_time is not None
    assert retried.start_time < retry.timestamp <= deduplicated.timestamp
    assert deduplicated.name == "chatledger.deduplicated"
    assert list(first.events) == []
    assert telemetry.total("chatledger.retries", db_operation_name="append") == 1
    # Only the first append stored bytes: the retried one found its ids stored.
    assert telemetry.total("chatledger.appended") == dict(first.attributes or {})[
        "chatledger.append.bytes"]


def test_conflicts_and_losses_are_errors_with_their_numbers(telemetry: Telemetry) -> None:
    with open_store("memory://", namespace=telemetry.namespace, tracing=True) as store:
        session = store.session("s")
        session.append([user("a")])
        with pytest.raises(ConflictError):
            session.append([user("b")], expect_version=0)
        with pytest.raises(MemoryLostError):
            session.read(min_version=9)
    _, conflict, lost = telemetry.spans()
    assert conflict.status.status_code is lost.status.status_code is StatusCode.ERROR
    conflict_attributes = dict(conflict.attributes or {})
    assert conflict_attributes["error.type"] == "ConflictError"
    assert conflict_attributes["chatledger.outcome"] == "conflict"
    assert (conflict_attributes["chatledger.conflict.expected"],
            conflict_attributes["chatledger.conflict.current"]) == (0, 1)
    lost_attributes = dict(lost.attributes or {})
    assert lost_attributes["error.type"] == "MemoryLostError"
    assert (lost_attributes["chatledger.memory_lost.expected"],
            lost_attributes["chatledger.memory_lost.found"]) == (9, 1)
    assert [event.name for event in lost.events] == ["exception"]
    assert telemetry.total("chatledger.conflicts") == 1
    assert telemetry.total("chatledger.memory_lost", db_operation_name="read") == 1
    assert telemetry.total("chatledger.retries") == 0


def test_a_read_refused_by_the_keyring_is_corrupt(telemetry: Telemetry, tmp_path: Path) -> None:
    """An entry the keyring cannot open is a corrupt entry (an alert on ``corrupt``
    must see it), whichever subclass of ``CorruptEntryError`` says so."""
    url = f"sqlite:///{tmp_path}/a.db"
    sealed = Keyring({"k1": Keyring.new_key()}, current="k1")
    wrong = Keyring({"k1": Keyring.new_key()}, current="k1")  # the same id, another key
    with open_store(url, namespace=telemetry.namespace, encryption=sealed) as store:
        store.session("s").append([user(SECRET)])
    with open_store(url, namespace=telemetry.namespace, encryption=wrong,
                    tracing=True) as store, pytest.raises(EncryptionKeyError):
        store.session("s").read()
    [span] = telemetry.spans()
    attributes = dict(span.attributes or {})
    assert (attributes["error.type"], attributes["chatledger.outcome"]) == (
        "EncryptionKeyError", "corrupt")
    assert telemetry.total("db.client.operation.duration", chatledger_outcome="corrupt") == 1


def test_the_duration_histogram_is_by_operation_and_outcome(telemetry: Telemetry) -> None:
    with open_store("memory://", namespace=telemetry.namespace, tracing=True) as store:
        session = store.session("user-42")
        message = user("once")
        session.append([message])
        session.append([message])
        with pytest.raises(ConflictError):
            session.append([user("b")], expect_version=0)
        session.read()
    points = telemetry.points("db.client.operation.duration")
    counts = {(p.attributes["db.operation.name"], p.attributes["chatledger.outcome"]): p.count
              for p in points}
    assert counts == {("append", "ok"): 1, ("append", "deduplicated"): 1,
                      ("append", "conflict"): 1, ("read", "ok"): 1}
    assert all(p.attributes["db.system.name"] == "chatledger.memory" for p in points)
    # Metrics carry no session id: its cardinality is the number of users.
    assert "user-42" not in repr([dict(p.attributes) for p in points])


def test_a_message_refused_before_any_io_is_a_span_without_its_content(
    telemetry: Telemetry,
) -> None:
    with open_store("memory://", namespace=telemetry.namespace, tracing=True) as store, \
            pytest.raises(InvalidMessage):
        store.session("s").append([user(SECRET + "\ud800")])
    [span] = telemetry.spans()
    attributes = dict(span.attributes or {})
    assert (attributes["error.type"], attributes["chatledger.attempts"]) == ("InvalidMessage", 0)
    assert span.status.description == "InvalidMessage"
    assert SECRET not in flat([span])
    assert telemetry.total("chatledger.appended") == 0


def test_tracing_is_off_unless_asked_for(telemetry: Telemetry, tmp_path: Path) -> None:
    with open_store("memory://", namespace=telemetry.namespace) as store:
        store.session("s").append([user("a")])
        assert store._telemetry == ()
    assert telemetry.spans() == []
    with open_store(f"sqlite:///{tmp_path}/a.db?tracing=true&namespace={telemetry.namespace}"
                    ) as store:
        store.session("s").read()
    assert [span.name for span in telemetry.spans()] == [f"read {telemetry.namespace}"]


def test_a_password_in_the_url_never_reaches_a_span(
    telemetry: Telemetry, tmp_path: Path
) -> None:
    password = "Hunter2-never-shown"
    with RedisServer(dir=tmp_path) as server:
        # Set after the start: the server's readiness probe pings without one.
        with redis.Redis(server.host, server.port) as admin:
            admin.config_set("requirepass", password)
        with open_store(f"redis://:{password}@{server.host}:{server.port}/0",
                        namespace=telemetry.namespace, tracing=True) as store:
            store.session("s").append([user("a")])
    [span] = telemetry.spans()
    assert dict(span.attributes or {})["server.port"] == server.port
    assert password not in flat([span])
    assert password not in repr(Where.of(parse_url(f"redis+cluster://u:{password}@a:1,b:2"), "n"))


@pytest.mark.parametrize(("options", "error"), [
    ({"tracing": 1}, "tracing must be a bool"),
    ({"prometheus": 1.5}, "prometheus must be a bool or a"),
])
def test_a_bad_switch_is_a_config_error(options: dict[str, object], error: str) -> None:
    with pytest.raises(ConfigError, match=error):
        open_store("memory://", **options)
    with pytest.raises(ConfigError, match="is not a boolean"):
        open_store(f"memory://?{next(iter(options))}=maybe")


@pytest.mark.parametrize(("option", "module", "extra"), [
    ("tracing", "opentelemetry", "otel"), ("prometheus", "prometheus_client", "prometheus")])
def test_a_missing_driver_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, option: str, module: str, extra: str
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *rest: None if name == module else real(name, *rest))
    hint = rf'pip install -e "\.\[{extra}\]" in a chatledger checkout'
    with pytest.raises(ConfigError, match=hint):
        open_store("memory://", **{option: True})
