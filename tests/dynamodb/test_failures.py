"""dynamodb:// when things go wrong, on both request paths (boto3 for sync stores,
aiobotocore for async ones): the same error in chatledger's terms for the same
reply of the server, and the clean-up paths that only failures reach."""

from __future__ import annotations

import uuid
import weakref
from typing import Any

import pytest
from click.testing import CliRunner

from chatledger import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    RetryPolicy,
    open_async_store,
    open_store,
    user,
)
from chatledger._backends.dynamodb import known
from chatledger._backends.dynamodb.layout import META, partition, user_partition
from chatledger._cli import main
from chatledger.testing import FaultProxy
from chatledger.testing._dynamodb_server import DynamoDBServer
from tests.blocking import _the_loop
from tests.dynamodb.conftest import Opener, items, retrying


def _through(proxy: FaultProxy, url: str, server: DynamoDBServer) -> str:
    return url.replace(server.endpoint_url, f"http://{proxy.url_netloc}")


# -- the server's error replies ---------------------------------------------------


def test_an_error_a_retry_cannot_fix_is_a_backend_error_at_once(
        opener: Opener, dynamodb_server: DynamoDBServer) -> None:
    session = opener(retry=retrying()).session("s")
    session.append([user("first")])
    fresh = opener(retry=retrying()).session("s")
    dynamodb_server.fail_next("ValidationException", operation="GetItem")
    with pytest.raises(BackendError, match="ValidationException: injected"):
        fresh.append([user("second")])  # not retried: the next GetItem would have worked
    assert fresh.append([user("second")]).first_seq == 2


@pytest.mark.parametrize("code", ["ThrottlingException", "InternalServerError",
                                  "ServiceUnavailable", "TransactionConflict"])
def test_retriable_replies_are_unavailable_on_both_paths(
        opener: Opener, dynamodb_server: DynamoDBServer, code: str) -> None:
    session = opener().session("s")
    session.append([user("first")])
    dynamodb_server.fail_next(code, operation="TransactWriteItems")
    with pytest.raises(BackendUnavailable, match=r"retriable|cancelled"):
        session.append([user("second")])
    dynamodb_server.fail_next(code, operation="TransactWriteItems", count=2)
    patient = opener(retry=retrying()).session("s")
    assert patient.append([user("second")]).first_seq == 2
    assert [m.text for m in session.read()] == ["first", "second"]


def test_a_transaction_cancelled_for_no_condition_nor_conflict_is_a_backend_error(
        opener: Opener, dynamodb_server: DynamoDBServer) -> None:
    session = opener(retry=retrying()).session("s")
    dynamodb_server.fail_next("TransactionCanceledException", operation="TransactWriteItems")
    with pytest.raises(BackendError, match="transaction cancelled"):
        session.append([user("refused")])
    assert session.info() is None  # nothing of it was stored
    assert session.append([user("kept")]).version == 1


def test_a_lost_reply_of_a_committed_transaction_is_found_by_the_retry(
        opener: Opener, dynamodb_server: DynamoDBServer) -> None:
    session = opener(retry=retrying()).session("s")
    first = session.append([user("q1")])
    dynamodb_server.fail_next("InternalServerError", operation="TransactWriteItems", after=True)
    ack = session.append([user("q2"), user("q3")])
    assert ack.deduplicated and (ack.first_seq, ack.last_seq) == (2, 3)
    assert ack.ledger == first.ledger
    assert [m.text for m in session.read()] == ["q1", "q2", "q3"]


# -- the network -------------------------------------------------------------------


def test_reset_connections_and_a_lost_reply_are_retried_with_the_same_ids(
        opener: Opener, dynamodb_url: str, dynamodb_server: DynamoDBServer) -> None:
    with FaultProxy(dynamodb_server.host, dynamodb_server.port) as proxy:
        store = opener(_through(proxy, dynamodb_url, dynamodb_server), retry=retrying())
        session = store.session("s")
        session.append([user("warm up")])
        proxy.lose_next_reply()
        assert session.append([user("q0")]).deduplicated
        proxy.reset_randomly(0.1, seed=3)
        for turn in range(1, 8):
            session.append([user(f"q{turn}")])
        proxy.clear()
    assert [m.text for m in opener().session("s").read()] == [
        "warm up", *(f"q{turn}" for turn in range(8))]


def test_nothing_listening_is_unavailable(opener: Opener,
                                          dynamodb_server: DynamoDBServer) -> None:
    with FaultProxy(dynamodb_server.host, dynamodb_server.port) as proxy:
        url = _through(proxy, dynamodb_server.url("gone"), dynamodb_server)
    with pytest.raises(BackendUnavailable, match="dynamodb"):
        opener(url).session("s").read()  # the proxy stopped: its port refuses


def test_no_credentials_is_a_config_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
                                          dynamodb_url: str) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setattr("chatledger._backends.dynamodb.aio._SESSIONS",
                        weakref.WeakKeyDictionary())  # no session that found credentials
    # A timeout of its own: a client the process made before (with credentials) is not reused.
    url = dynamodb_url + "&timeout=4.25"
    with open_store(url, retry=RetryPolicy.none()) as store, \
            pytest.raises(ConfigError, match="no AWS credentials found"):
        store.session("s").read()

    async def run() -> None:
        async with await open_async_store(url, retry=RetryPolicy.none()) as store:
            await store.session("s").read()

    with pytest.raises(ConfigError, match="no AWS credentials found"):
        _the_loop().run(run())


@pytest.mark.parametrize("endpoint", ["notaurl", "ftp://host", "http://"])
def test_an_endpoint_that_is_no_http_url_is_a_config_error(endpoint: str) -> None:
    with pytest.raises(ConfigError, match=rf"endpoint_url='{endpoint}' is not an http:// or "
                                          r"https:// URL with a host"):
        open_store(f"dynamodb://table?region=eu-west-1&endpoint_url={endpoint}")


def test_no_region_is_a_config_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
                                     dynamodb_server: DynamoDBServer) -> None:
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    url = f"dynamodb://table?endpoint_url={dynamodb_server.endpoint_url}&timeout=4.75"
    with pytest.raises(ConfigError, match=r"no AWS region: give \?region=\.\.\. in the URL"), \
            open_store(url, retry=RetryPolicy.none()) as store:
        store.session("s").read()


# -- what doctor says about a table chatledger did not make ---------------------------


def test_doctor_names_what_is_wrong_with_a_foreign_table(
        opener: Opener, raw: Any, dynamodb_server: DynamoDBServer) -> None:
    table = f"foreign-{uuid.uuid4().hex[:8]}"
    raw.create_table(TableName=table, BillingMode="PROVISIONED",
                     ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
                     AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                     KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}])
    found = {check.name: (check.status, check.detail)
             for check in opener(dynamodb_server.url(table))._backend.checks()}
    assert found["table"][0] == "ok"
    assert found["key schema"][0] == "fail" and "create-table" in found["key schema"][1]
    assert found["ttl"][0] == "warn" and "never deleted" in found["ttl"][1]
    assert found["billing"] == ("info", "provisioned: 5 RCU, 5 WCU; a burst over them is "
                                "throttled (retried by the store within its deadline)")
    assert "round trip" not in found  # a GetItem of chatledger's keys would only be refused
    assert found["key schema"][1].startswith("keys id (HASH), indexes none: not chatledger's")


FOREIGN_KEYS = {"pk-only": [("pk", "HASH")], "upper-case": [("PK", "HASH"), ("SK", "RANGE")]}


@pytest.mark.parametrize("keys", list(FOREIGN_KEYS))
def test_doctor_on_a_table_of_another_key_schema_exits_1_naming_it(
        raw: Any, dynamodb_server: DynamoDBServer, keys: str) -> None:
    """The server answers, the table is there, and it is not chatledger's: a finding
    (exit 1) on one line that names its keys, not a driver's error (exit 2)."""
    schema = FOREIGN_KEYS[keys]
    table = f"foreign-{uuid.uuid4().hex[:8]}"
    raw.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                     AttributeDefinitions=[{"AttributeName": name, "AttributeType": "S"}
                                           for name, _ in schema],
                     KeySchema=[{"AttributeName": name, "KeyType": kind}
                                for name, kind in schema])
    result = CliRunner().invoke(main, ["doctor", dynamodb_server.url(table)])
    assert result.exit_code == 1, result.output
    named = ", ".join(f"{name} ({kind})" for name, kind in schema)
    [line] = [line for line in result.output.splitlines() if "FAIL" in line]
    assert "key schema" in line and named in line and "create-table" in line
    assert "ValidationException" not in result.output
    with open_store(dynamodb_server.url(table), retry=RetryPolicy.none()) as store, \
            pytest.raises(BackendError, match="not chatledger's") as refused:
        store.session("s").read()
    assert "ValidationException" not in str(refused.value)


def test_doctor_on_a_missing_table_fails_one_check_on_both_paths(
        opener: Opener, dynamodb_server: DynamoDBServer) -> None:
    store = opener(dynamodb_server.url("missing-table"))
    assert [(c.name, c.status) for c in store._backend.checks()] == [("table", "fail")]
    with pytest.raises(BackendError, match="table does not exist"):
        store.session("s").read()


def test_create_true_on_an_existing_table_creates_nothing_on_both_paths(
        opener: Opener, dynamodb_url: str) -> None:
    store = opener(dynamodb_url + "&create=true")
    assert store._backend.created is False
    assert store.session("s").append([user("x")]).version == 1


# -- clean-up paths ---------------------------------------------------------------


def test_forget_user_deletes_what_ttl_left_of_a_session(
        opener: Opener, raw: Any, dynamodb_url: str, namespace: str) -> None:
    """DynamoDB's TTL deletes an expired session's meta item only: its entries and ids
    stay until the erasure, which finds them through the user index."""
    store = opener()
    store.session("gone", user="carol").append([user("carol's secret"), user("more")])
    store.session("kept", user="dave").append([user("dave's turn")])
    table = dynamodb_url.split("://", 1)[1].split("?", 1)[0]
    raw.delete_item(TableName=table, Key={"pk": {"S": partition(namespace, "gone")},
                                          "sk": {"S": META}})  # what TTL does
    report = store.forget_user("carol")
    assert report.already_gone == ("gone",) and report.deleted == ()
    left = [item for item in items(raw, dynamodb_url)
            if item["pk"]["S"] in (partition(namespace, "gone"),
                                   user_partition(namespace, "carol"))]
    assert left == []
    assert [m.text for m in store.session("kept").read()] == ["dave's turn"]


def test_forget_user_leaves_a_session_written_again_by_someone_else(opener: Opener) -> None:
    store = opener()
    store.session("s", user="erin").append([user("erin's")])
    store.session("s").delete()
    store.session("s", user="frank").append([user("frank's")])
    assert store._backend.user_sessions("erin") == ["s"]  # the index item outlives a delete
    report = store.forget_user("erin")
    assert report.deleted == () and report.already_gone == ("s",)
    assert store._backend.user_sessions("erin") == []
    assert [m.text for m in store.session("s").read()] == ["frank's"]
    assert store.forget_user("frank").deleted == ("s",)


def test_delete_removes_what_an_older_ledger_left(
        opener: Opener, raw: Any, dynamodb_url: str, namespace: str) -> None:
    """A session that expired and was written again keeps the old ledger's items above
    the new version (unreachable); deleting the session deletes them too."""
    clock = [1_800_000_000.0]
    store = opener(ttl=60, clock=lambda: clock[0])
    store.session("s").append([user(f"old {i}") for i in range(4)])
    clock[0] += 61
    store.session("s").append([user("new")])
    mine = partition(namespace, "s")
    assert len([i for i in items(raw, dynamodb_url) if i["pk"]["S"] == mine]) > 3
    assert store.session("s").delete()
    assert [i for i in items(raw, dynamodb_url) if i["pk"]["S"] == mine] == []


def test_deleting_items_leaves_the_ones_rewritten_meanwhile(
        open_dynamo: Any, raw: Any, dynamodb_url: str, namespace: str) -> None:
    store = open_dynamo()
    store.session("s").append([user(f"m{i}") for i in range(3)])
    ledger = store.session("s").info().ledger
    table = dynamodb_url.split("://", 1)[1].split("?", 1)[0]
    key = {"pk": {"S": partition(namespace, "s")}, "sk": {"S": "e" + "2".zfill(20)}}
    raw.update_item(TableName=table, Key=key, UpdateExpression="SET ledger = :other",
                    ExpressionAttributeValues={":other": {"S": "someone-else"}})
    entries = ["e" + str(seq).zfill(20) for seq in (1, 2, 3)]
    store._backend._delete_items("s", entries, "ledger", ledger)
    left = [i["sk"]["S"] for i in items(raw, dynamodb_url)
            if i["pk"]["S"] == key["pk"]["S"] and i["sk"]["S"].startswith("e")]
    assert left == [key["sk"]["S"]]


def test_a_backend_remembers_a_bounded_number_of_sessions(
        open_dynamo: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(known, "REMEMBERED", 2)
    store = open_dynamo()
    for sid in ("a", "b", "c"):
        store.session(sid).append([user(sid)])
    assert list(store._backend._known) == ["b", "c"]  # the oldest is forgotten
    assert store.session("a").append([user("again")]).first_seq == 2  # read again
