"""dynamodb:// under faults: a network that resets and hangs (FaultProxy in front of
the emulator), and the errors DynamoDB sends that an emulator never does by itself
(throttling, transaction conflicts, server errors), armed on the emulator as its
replies. The lost reply of a committed transaction, which every server backend
meets alike, is in tests/faults/test_network.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from botocore.exceptions import ReadTimeoutError

from chatledger import BackendUnavailable, assistant, user
from chatledger.testing import FaultProxy
from chatledger.testing._dynamodb_server import DynamoDBServer
from tests.dynamodb.conftest import OpenDynamo, retrying


@pytest.fixture
def proxy(dynamodb_server: DynamoDBServer) -> Iterator[FaultProxy]:
    with FaultProxy(dynamodb_server.host, dynamodb_server.port) as running:
        yield running


def _through(proxy: FaultProxy, url: str, server: DynamoDBServer) -> str:
    return url.replace(server.endpoint_url, f"http://{proxy.url_netloc}")


def test_reset_connections_are_retried_with_the_same_ids(
        open_dynamo: OpenDynamo, proxy: FaultProxy, dynamodb_url: str,
        dynamodb_server: DynamoDBServer) -> None:
    store = open_dynamo(_through(proxy, dynamodb_url, dynamodb_server), retry=retrying())
    session = store.session("s")
    proxy.reset_randomly(0.1, seed=7)
    for turn in range(10):
        session.append([user(f"q{turn}"), assistant(f"a{turn}")])
    proxy.clear()
    texts = [m.text for m in open_dynamo().session("s").read()]
    assert texts == [t for turn in range(10) for t in (f"q{turn}", f"a{turn}")]


@pytest.mark.timeout(120)  # bounds a hang (the test's failure mode), not its speed
def test_a_hung_endpoint_fails_at_the_stores_timeout(
        open_dynamo: OpenDynamo, proxy: FaultProxy, dynamodb_url: str,
        dynamodb_server: DynamoDBServer) -> None:
    """Cut by a read timeout that is the store's ``timeout``, not botocore's 60 s: shown
    by the cause and the client's setting, which no load on the machine changes."""
    store = open_dynamo(_through(proxy, dynamodb_url, dynamodb_server), timeout=1.0)
    store.session("s").append([user("before")])
    proxy.blackhole()
    with pytest.raises(BackendUnavailable, match="ReadTimeoutError") as raised:
        store.session("s").append([user("during")])
    assert isinstance(raised.value.__cause__, ReadTimeoutError)
    config = store._backend.io.client().meta.config
    assert (config.read_timeout, config.connect_timeout) == (1.0, 1.0)
    assert config.retries["total_max_attempts"] == 1  # the store's retries, not botocore's
    proxy.clear()
    assert [m.text for m in open_dynamo().session("s").read()] in (["before"],
                                                                  ["before", "during"])


@pytest.mark.parametrize(("code", "operation"), [
    ("ThrottlingException", "TransactWriteItems"),
    ("ProvisionedThroughputExceededException", "GetItem"),
    ("TransactionConflict", "TransactWriteItems"),
    ("InternalServerError", "TransactWriteItems"),
    ("RequestLimitExceeded", "Query"),
])
def test_throttling_conflicts_and_server_errors_are_unavailable_then_retried(
        open_dynamo: OpenDynamo, dynamodb_server: DynamoDBServer, code: str,
        operation: str) -> None:
    session = open_dynamo().session("s")
    session.append([user("first")])
    fresh = open_dynamo().session("s")  # remembers nothing: its append reads the meta item
    dynamodb_server.fail_next(code, operation=operation)
    with pytest.raises(BackendUnavailable, match=r"retriable|cancelled"):
        fresh.read() if operation == "Query" else fresh.append([user("second")])
    dynamodb_server.fail_next(code, operation=operation, count=2)
    patient = open_dynamo(retry=retrying()).session("s")
    if operation == "Query":
        assert [m.text for m in patient.read()] == ["first"]
    else:
        assert patient.append([user("second")]).first_seq == 2
        assert [m.text for m in session.read()] == ["first", "second"]


def test_a_committed_transaction_answered_with_an_error_is_not_stored_twice(
        open_dynamo: OpenDynamo, dynamodb_server: DynamoDBServer) -> None:
    session = open_dynamo(retry=retrying()).session("s")
    first = session.append([user("q1"), assistant("a1")])
    dynamodb_server.fail_next("InternalServerError", operation="TransactWriteItems", after=True)
    ack = session.append([user("q2"), assistant("a2")])
    assert ack.deduplicated and (ack.first_seq, ack.last_seq) == (3, 4)
    assert ack.ledger == first.ledger
    assert [m.text for m in session.read()] == ["q1", "a1", "q2", "a2"]


def test_a_paused_emulator_is_unavailable_and_then_serves_again(
        private_dynamodb: DynamoDBServer, namespace: str) -> None:
    from chatledger import open_store

    url = private_dynamodb.table_url()
    with open_store(url, namespace=namespace, timeout=0.5,
                    retry=retrying(attempts=2, deadline=1.5)) as store:
        store.session("s").append([user("kept")])
        private_dynamodb.pause()
        try:
            with pytest.raises(BackendUnavailable):
                store.session("s").read()
        finally:
            private_dynamodb.resume()
        assert [m.text for m in store.session("s").read()] == ["kept"]
