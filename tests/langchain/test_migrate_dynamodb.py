"""``chatledger migrate --from-langchain-dynamodb``: a real DynamoDBChatMessageHistory table.

The table is made as LangChain's docs say (``SessionId`` partition key) on the
private DynamoDB emulator and filled by DynamoDBChatMessageHistory itself.
"""

from __future__ import annotations

import uuid
import warnings
from pathlib import Path
from typing import Any

import boto3
from click.testing import CliRunner
from langchain_core.messages import AIMessage, HumanMessage

from chatledger import open_store
from chatledger._cli import main
from chatledger.testing._dynamodb_server import DynamoDBServer


def _history(server: DynamoDBServer, table: str, session: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_community.chat_message_histories import (
            DynamoDBChatMessageHistory,
        )

        return DynamoDBChatMessageHistory(table_name=table, session_id=session,
                                          endpoint_url=server.endpoint_url)


def test_a_table_is_imported_once_oldest_first_and_bad_messages_are_named(
        dynamodb_server: DynamoDBServer, tmp_path: Path) -> None:
    table = f"SessionTable-{uuid.uuid4().hex[:8]}"
    client = boto3.client("dynamodb", region_name=dynamodb_server.region,
                          endpoint_url=dynamodb_server.endpoint_url)
    client.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                        AttributeDefinitions=[{"AttributeName": "SessionId",
                                               "AttributeType": "S"}],
                        KeySchema=[{"AttributeName": "SessionId", "KeyType": "HASH"}])
    _history(dynamodb_server, table, "ada").add_messages(
        [HumanMessage("where is order 123?"), AIMessage("on its way 🚚")])
    _history(dynamodb_server, table, "bob").add_messages(
        [HumanMessage("hello", id="m-1"), AIMessage("hi bob")])
    client.update_item(  # a message LangChain could not read back either
        TableName=table, Key={"SessionId": {"S": "ada"}},
        UpdateExpression="SET History = list_append(History, :bad)",
        ExpressionAttributeValues={":bad": {"L": [{"M": {"type": {"S": "nonsense"},
                                                          "data": {"M": {}}}}]}})
    source = dynamodb_server.url(table)
    target = f"sqlite:///{tmp_path}/ledger.db"
    args = ["migrate", "--from-langchain-dynamodb", source, "--to", target]
    dry = CliRunner().invoke(main, [*args, "--dry-run"])
    assert dry.exit_code == 1, dry.output  # a message could not be imported
    assert "would import 4 messages into 2 sessions" in dry.output
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 1
    assert "2 sessions found" in first.output and "imported 4 messages" in first.output
    assert f"{table} session ada [2]: ValueError" in first.output  # its place in History
    again = CliRunner().invoke(main, args)
    assert "imported 0 messages" in again.output and "4 messages already in" in again.output
    with open_store(target) as store:
        assert [m.text for m in store.session("ada").read()] == ["where is order 123?",
                                                                 "on its way 🚚"]
        bob_messages = store.session("bob").read().messages
    assert [(m.role, m.text) for m in bob_messages] == [("user", "hello"), ("assistant", "hi bob")]
    assert bob_messages[0].id == "m-1"


def test_a_missing_table_is_a_command_error(dynamodb_server: DynamoDBServer,
                                            tmp_path: Path) -> None:
    missing = CliRunner().invoke(main, ["migrate", "--from-langchain-dynamodb",
                                        dynamodb_server.url("no-such-table"),
                                        "--to", f"sqlite:///{tmp_path}/ledger.db"])
    assert missing.exit_code == 2 and "no-such-table" in missing.output
