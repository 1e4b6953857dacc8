"""``chatledger rotate-key`` as an operator runs it, and the LangGraph saver's
checkpoints rotating with the rest of their namespace."""

from __future__ import annotations

import base64
import sqlite3
import uuid
from pathlib import Path
from typing import TypedDict

import pytest
from click.testing import CliRunner, Result
from langgraph.graph import END, START, StateGraph

from chatledger import EncryptionKeyError, Keyring, open_store, user
from chatledger._cli import main
from chatledger.langgraph import LedgerSaver
from tests.privacy.at_rest import at_rest

OLD, NEW = Keyring.new_key(), Keyring.new_key()


def keys(*pairs: tuple[str, bytes]) -> str:
    return ",".join(f"{kid}={base64.b64encode(key).decode()}" for kid, key in pairs)


def rotate(url: str, keyring: str | None, *extra: str) -> Result:
    env = {"CHATLEDGER_KEYRING": keyring}
    return CliRunner().invoke(main, ["rotate-key", "--url", url, "--namespace", "bot", *extra],
                              env=env)


def test_rotate_key_says_what_it_did_and_a_second_run_that_nothing_is_left(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path}/a.db"
    with open_store(url, namespace="bot", encryption=Keyring({"old": OLD}, current="old")) as s:
        s.session("u1").append([user("card 4111"), user("ok")])
    with open_store(url, namespace="bot") as plain:
        plain.session("u2").append([user("before encryption")])
    both = keys(("new", NEW), ("old", OLD))
    dry = rotate(url, both, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert dry.stdout.startswith("dry run: namespace 'bot' at sqlite:///")
    assert ("would re-seal 3 entries with key 'new' (2 from older keys, 1 stored in the "
            "clear) in 2 session(s); 0 already current") in dry.stdout
    done = rotate(url, both)
    assert done.exit_code == 0 and "re-sealed 3 entries with key 'new'" in done.stdout
    again = rotate(url, keys(("new", NEW)))  # the old key is no longer needed
    assert again.exit_code == 0
    assert "nothing to rotate in namespace 'bot'" in again.stdout
    assert "3 entries in 2 session(s) are all sealed with key 'new'" in again.stdout
    entries = at_rest(url, "bot").entries
    assert [entry[:5] for entry in entries] == [b"\x03\x03new"] * 3


def test_rotate_key_without_a_keyring_or_without_the_old_key_says_which(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/a.db"
    with open_store(url, namespace="bot", encryption=Keyring({"old": OLD}, current="old")) as s:
        s.session("u1").append([user("card 4111")])
    unkeyed = rotate(url, None)
    assert unkeyed.exit_code == 2 and "set CHATLEDGER_KEYRING=" in unkeyed.output
    missing = rotate(url, keys(("new", NEW)))
    assert missing.exit_code == 1
    assert "key id 'old'" in missing.output and "u1" in missing.output
    assert base64.b64encode(NEW).decode() not in missing.output
    nothing = CliRunner().invoke(main, ["rotate-key", "--url", f"sqlite:///{tmp_path}/no.db"],
                                 env={"CHATLEDGER_KEYRING": keys(("new", NEW))})
    assert nothing.exit_code == 2 and "no SQLite database" in nothing.output


def test_rotate_key_with_other_bytes_under_the_current_key_id_fails_and_says_so(
    tmp_path: Path,
) -> None:
    """Issue 36: the entries already sealed under the current id are opened, not
    trusted by their id, so a wrong key is never reported as all current."""
    url = f"sqlite:///{tmp_path}/a.db"
    current = Keyring({"2027-01": NEW}, current="2027-01")
    with open_store(url, namespace="bot", encryption=current) as s:
        s.session("u1").append([user("card 4111"), user("ok")])
    wrong = rotate(url, keys(("2027-01", OLD)))
    assert wrong.exit_code == 1, wrong.output
    assert "rotate-key stopped" in wrong.output and "all sealed" not in wrong.output
    assert "key id '2027-01'" in wrong.output and "'u1'" in wrong.output
    assert base64.b64encode(OLD).decode() not in wrong.output
    for dry in ([], ["--dry-run"]):
        right = rotate(url, keys(("2027-01", NEW)), *dry)
        assert right.exit_code == 0 and "2 entries in 1 session(s) are all sealed" in right.stdout


def test_an_entry_cut_short_in_its_head_stops_rotate_key_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    url = f"sqlite:///{path}"
    with open_store(url, namespace="bot", encryption=Keyring({"old": OLD}, current="old")) as s:
        s.session("u1").append([user("one"), user("two"), user("three")])
    with sqlite3.connect(path) as db:
        body = db.execute("SELECT body FROM entries WHERE seq = 2").fetchone()[0]
        db.execute("UPDATE entries SET body = ? WHERE seq = 2", (body[:8],))
    db.close()
    stopped = rotate(url, keys(("new", NEW), ("old", OLD)))
    assert stopped.exit_code == 1, stopped.output
    assert ("rotate-key stopped: session 'u1': entry seq=2 cannot be decoded: sealed entry: "
            "the head is truncated. No key opens a damaged entry") in stopped.output


class State(TypedDict):
    note: str


def test_the_savers_checkpoints_rotate_with_their_namespace(tmp_path: Path) -> None:
    marker = uuid.uuid4().hex
    url = f"sqlite:///{tmp_path}/g.db"
    builder = StateGraph(State)
    builder.add_node("write", lambda state: {"note": f"{state['note']} {marker}"})
    builder.add_edge(START, "write")
    builder.add_edge("write", END)
    config = {"configurable": {"thread_id": "t1"}}
    with LedgerSaver.from_url(url, encryption=Keyring({"old": OLD}, current="old")) as saver:
        builder.compile(checkpointer=saver).invoke({"note": "card 4111"}, config)
    both = Keyring({"new": NEW, "old": OLD}, current="new")
    with open_store(url, encryption=both) as store:
        report = store.rotate_key()
        namespace = store.namespace
    assert report.resealed > 0 and report.encrypted == 0 and report.current == 0
    entries = at_rest(url, namespace).entries
    assert entries and all(entry[:5] == b"\x03\x03new" for entry in entries)
    with LedgerSaver.from_url(url, encryption=Keyring({"new": NEW}, current="new")) as saver:
        state = builder.compile(checkpointer=saver).get_state(config)
        assert state.values["note"] == f"card 4111 {marker}"
    with LedgerSaver.from_url(url, encryption=Keyring({"old": OLD}, current="old")) as stale, \
            pytest.raises(EncryptionKeyError, match="'new'"):
        builder.compile(checkpointer=stale).get_state(config)


def test_an_async_store_rotates_sqlite_through_its_worker_threads(tmp_path: Path) -> None:
    import asyncio

    from chatledger import open_async_store

    url = f"sqlite:///{tmp_path}/a.db"
    with open_store(url, encryption=Keyring({"old": OLD}, current="old")) as store:
        store.session("s").append([user("a"), user("b")])

    async def rotate() -> tuple[int, list[str]]:
        both = Keyring({"new": NEW, "old": OLD}, current="new")
        async with await open_async_store(url, encryption=both) as store:
            report = await store.rotate_key()
            history = await store.session("s").read()
        return report.resealed, [m.text for m in history]

    assert asyncio.run(rotate()) == (2, ["a", "b"])
    assert [entry[:5] for entry in at_rest(url, "default").entries] == [b"\x03\x03new"] * 2
