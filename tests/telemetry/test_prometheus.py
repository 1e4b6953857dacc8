"""Prometheus: the same metrics, read back by scraping a registry."""

from __future__ import annotations

import uuid

import pytest
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from chatledger import ConflictError, MemoryLostError, RetryPolicy, open_store, user
from chatledger.testing import FaultProxy, RedisServer

SECRET = "the secret of order 123"


def scrape(registry: CollectorRegistry) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The registry's exposition text, parsed: (sample name, labels) -> value."""
    text = generate_latest(registry).decode()
    assert SECRET not in text
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def labels(operation: str, **more: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({"db_system": "chatledger.memory", "namespace": "bot",
                         "operation": operation, **more}.items()))


def test_the_metrics_are_scraped_by_operation_and_outcome() -> None:
    registry = CollectorRegistry()
    with open_store("memory://", namespace="bot", prometheus=registry) as store:
        session = store.session("user-42")
        message = user(SECRET)
        ack = session.append([message])
        session.append([message])
        with pytest.raises(ConflictError):
            session.append([user("b")], expect_version=0)
        with pytest.raises(MemoryLostError):
            session.read(min_version=5)
    samples = scrape(registry)
    count = "chatledger_operation_duration_seconds_count"
    assert samples[(count, labels("append", outcome="ok"))] == 1
    assert samples[(count, labels("append", outcome="deduplicated"))] == 1
    assert samples[(count, labels("append", outcome="conflict"))] == 1
    assert samples[(count, labels("read", outcome="memory_lost"))] == 1
    assert samples[("chatledger_conflicts_total", labels("append"))] == 1
    assert samples[("chatledger_memory_lost_total", labels("read"))] == 1
    assert samples[("chatledger_appended_bytes_total", labels("append"))] > len(SECRET)
    assert ack.version == 1
    assert not any("user-42" in str(key) for key in samples)


def test_two_stores_share_one_registrys_metrics() -> None:
    registry = CollectorRegistry()
    for _ in range(2):
        with open_store("memory://", namespace="bot", prometheus=registry) as store:
            store.session("s").read()
    count = "chatledger_operation_duration_seconds_count"
    assert scrape(registry)[(count, labels("read", outcome="ok"))] == 2


def test_retries_are_counted(redis_server: RedisServer) -> None:
    registry = CollectorRegistry()
    with FaultProxy(redis_server.host, redis_server.port) as proxy, open_store(
        f"redis://{proxy.url_netloc}/0", namespace="bot", prometheus=registry,
        retry=RetryPolicy(attempts=5, deadline=10.0),
    ) as store:
        store.session("s").append([user("warm up")])
        proxy.lose_next_reply()
        assert store.session("s").append([user(SECRET)]).deduplicated
    retries = {"db_system": "redis", "namespace": "bot", "operation": "append"}
    assert scrape(registry)[("chatledger_retries_total", tuple(sorted(retries.items())))] == 1


def test_true_records_into_the_default_registry() -> None:
    namespace = f"prom-{uuid.uuid4().hex[:12]}"
    with open_store(f"memory://?prometheus=true&namespace={namespace}") as store:
        store.session("s").info()
    value = REGISTRY.get_sample_value("chatledger_operation_duration_seconds_count", {
        "db_system": "chatledger.memory", "namespace": namespace, "operation": "info",
        "outcome": "ok"})
    assert value == 1
