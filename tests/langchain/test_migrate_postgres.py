"""``chatledger migrate --from-langchain-postgres``: a real PostgresChatMessageHistory table.

The table is made with langchain-postgres's own DDL and filled as its
``add_messages`` does (``message_to_dict`` as JSONB), on the private PostgreSQL.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import psycopg
from click.testing import CliRunner
from langchain_core.messages import AIMessage, HumanMessage, message_to_dict
from psycopg import sql

from chatledger import open_store
from chatledger._cli import main

DDL = """
CREATE TABLE {table} (
    id SERIAL PRIMARY KEY,
    session_id UUID NOT NULL,
    message JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT NOW()
);
CREATE INDEX ON {table} (session_id);
"""


def _table(postgres_url: str, rows: list[tuple[str, str]]) -> str:
    name = f"chat_history_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute(sql.SQL(DDL).format(table=sql.Identifier(name)))
        for session_id, message in rows:
            connection.execute(sql.SQL("INSERT INTO {} (session_id, message) VALUES (%s, %s)")
                               .format(sql.Identifier(name)), (session_id, message))
    return name


def _dumped(message: object) -> str:
    return json.dumps(message_to_dict(message))  # type: ignore[arg-type]


def test_a_table_is_imported_once_oldest_first_and_bad_rows_are_named(
    postgres_url: str, tmp_path: Path,
) -> None:
    ada, bob = str(uuid.uuid4()), str(uuid.uuid4())
    table = _table(postgres_url, [
        (ada, _dumped(HumanMessage("where is order 123?"))),
        (bob, _dumped(HumanMessage("hello", id="m-1"))),
        (ada, _dumped(AIMessage("on its way 🚚"))),
        (ada, '{"type": "nonsense", "data": {}}'),
        (bob, _dumped(AIMessage("hi bob"))),
    ])
    target = f"sqlite:///{tmp_path}/ledger.db"
    args = ["migrate", "--from-langchain-postgres", postgres_url, "--table", table,
            "--to", target]
    dry = CliRunner().invoke(main, [*args, "--dry-run"])
    assert dry.exit_code == 1, dry.output  # a row could not be imported
    assert "would import 4 messages into 2 sessions" in dry.output
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 1
    assert "2 sessions found" in first.output and "imported 4 messages" in first.output
    assert f"{table} session {ada} [4]: ValueError" in first.output  # the row's id
    again = CliRunner().invoke(main, args)
    assert "imported 0 messages" in again.output and "4 messages already in" in again.output
    with open_store(target) as store:
        assert [m.text for m in store.session(ada).read()] == ["where is order 123?",
                                                               "on its way 🚚"]
        bob_messages = store.session(bob).read().messages
    assert [(m.role, m.text) for m in bob_messages] == [("user", "hello"), ("assistant", "hi bob")]
    assert bob_messages[0].id == "m-1"  # LangChain's own id is kept


def test_usage_mistakes_and_a_missing_table(postgres_url: str, tmp_path: Path) -> None:
    target = f"sqlite:///{tmp_path}/ledger.db"
    neither = CliRunner().invoke(main, ["migrate", "--to", target])
    assert neither.exit_code == 2 and "give one of --from-langchain" in neither.output
    no_table = CliRunner().invoke(main, ["migrate", "--from-langchain-postgres", postgres_url,
                                         "--to", target])
    assert no_table.exit_code == 2 and "needs --table" in no_table.output
    missing = CliRunner().invoke(main, ["migrate", "--from-langchain-postgres", postgres_url,
                                        "--table", "no_such_table", "--to", target])
    assert missing.exit_code == 2 and "no_such_table" in missing.output
