"""``chatledger doctor`` decodes a sample of every kind of session's entries:
a damaged conversation entry, or a damaged checkpoint, fails the ``entries`` check."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from click.testing import CliRunner
from langgraph.checkpoint.base import CheckpointMetadata, empty_checkpoint

from chatledger import Keyring, open_store, system, user
from chatledger._checks import Check
from chatledger._cli import main
from chatledger._doctor import diagnose
from chatledger.langgraph import LedgerSaver
from chatledger.langgraph._layout import session_id


def _check(url: str, **options: object) -> Check | None:
    found = [c for c in diagnose(url, namespace="bot", **options).checks if c.name == "entries"]
    return found[0] if found else None


def _thread(url: str) -> None:
    with LedgerSaver(open_store(url, namespace="bot")) as saver:
        md: CheckpointMetadata = {"source": "loop", "step": 0}  # type: ignore[typeddict-item]
        saver.put({"configurable": {"thread_id": "t1", "checkpoint_ns": ""}},
                  empty_checkpoint(), md, {})


def test_readable_sessions_of_each_kind_pass(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/a.db"
    with open_store(url, namespace="bot") as store:
        store.session("user-1").append([user("hi")])
    _thread(url)
    check = _check(url)
    assert check is not None and check.status == "ok", check
    assert check.detail == ("the newest 16 entries of 1 conversation(s), 2 checkpointer "
                            "session(s) decode")


def test_a_damaged_conversation_entry_fails_the_check(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/a.db"
    with open_store(url, namespace="bot") as store:
        store.session("user-1").append([user("first"), user("second")])
        store.session("user-2").append([user("fine")])
    with sqlite3.connect(tmp_path / "a.db") as db:
        db.execute("UPDATE entries SET body = x'01' || x'7b7b' WHERE sid = 'user-1' AND seq = 2")
    check = _check(url)
    assert check is not None and (check.status, check.value) == ("fail", 1), check
    assert check.detail.startswith("1 of 2 session(s) sampled hold entries that cannot be "
                                   "decoded: conversation 'user-1': its bytes are not valid "
                                   "JSON"), check.detail
    result = CliRunner().invoke(main, ["doctor", url, "--namespace", "bot"])
    assert result.exit_code == 1, result.output
    assert "FAIL  entries" in result.output


def test_a_message_whose_tool_calls_are_not_a_list_fails_the_check(tmp_path: Path) -> None:
    """Every reader walks a message's tool calls as a list (the inspector's page gave a
    server error): such an entry is damaged, said in JSON's words."""
    url = f"sqlite:///{tmp_path}/a.db"
    with open_store(url, namespace="bot") as store:
        store.session("user-1").append([user("first")])
    with sqlite3.connect(tmp_path / "a.db") as db:
        db.execute("""UPDATE entries SET body = x'01' || CAST(json_set(CAST(substr(body, 2)
                      AS TEXT), '$.tc', json('{"id": "c1"}')) AS BLOB) WHERE sid = 'user-1'""")
    check = _check(url)
    assert check is not None and check.status == "fail", check
    assert "conversation 'user-1': its tool calls are an object, not a list (seq 1)" in \
        check.detail, check.detail


def test_a_damaged_checkpoint_is_named_by_its_thread(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/a.db"
    _thread(url)
    with open_store(url, namespace="bot") as store:
        store.session(session_id("t1", "")).append(
            [system("bad", metadata={"langgraph": 1, "kind": "CheckpointEntry"})])
    check = _check(url)
    assert check is not None and check.status == "fail", check
    assert "thread 't1' checkpoint_ns '': checkpoint entry format 1" in check.detail
    assert "lg:" not in check.detail


def test_sealed_sessions_without_the_keyring_are_counted_not_failed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/a.db"
    keyring = Keyring({"k1": bytes(range(32))}, current="k1")
    with open_store(url, namespace="bot", encryption=keyring) as store:
        store.session("user-1").append([user("secret")])
    check = _check(url)
    assert check is not None and check.status == "ok", check
    assert "1 sealed, not opened without the keyring" in check.detail
    opened = _check(url, encryption=keyring)
    assert opened is not None and opened.status == "ok" and "sealed" not in opened.detail


def test_an_empty_namespace_has_no_such_check(tmp_path: Path) -> None:
    assert _check(f"sqlite:///{tmp_path}/a.db") is None
