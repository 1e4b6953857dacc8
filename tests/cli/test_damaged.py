"""A session holding a damaged entry, damaged in the SQLite file itself: ``show`` prints
every message that decodes and the damaged one in its place, with its seq and doctor's
reason for it (the words the inspector shows), and exits 3; ``export`` fails naming the
session and seq and leaves no file that looks like a whole export, or with
--skip-damaged writes everything readable and says what it left out."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from chatledger import assistant, open_store, user
from chatledger._cli import main
from chatledger._doctor import diagnose
from tests.damaged_entries import INTERNALS, NEW_KEY, OLD_KEY, damage, plain

NEW_KEY_ENV = f"new={base64.b64encode(b'n' * 32).decode()}"
DAMAGED_EXIT = 3


def _sealed(path: Path) -> None:
    """Four messages, the second sealed with a key the CLI's keyring will not hold."""
    url = f"sqlite:///{path}"
    for keyring, messages in ((NEW_KEY, [user("first, readable")]),
                              (OLD_KEY, [assistant("second", data=b"\x00" * 64)]),
                              (NEW_KEY, [user("third, readable"),
                                         assistant("fourth, readable")])):
        with open_store(url, encryption=keyring) as store:
            store.session("broken").append(messages)


def _with_tool_calls(body: bytes, calls: object) -> bytes:
    """A stored entry's bytes with its record's tool calls replaced by ``calls``."""
    end = 5 + int.from_bytes(body[1:5], "big")
    header = orjson.dumps({**orjson.loads(body[5:end]), "tc": calls})
    return body[:1] + len(header).to_bytes(4, "big") + header + body[end:]


DAMAGES: dict[str, tuple[Callable[[Path], None], Callable[[bytes], bytes], bool, str]] = {
    "not JSON": (plain, lambda _: b"\x01{not json", False, "its bytes are not valid JSON"),
    "truncated": (plain, lambda body: body[:12], False, "truncated: the head announces"),
    "unknown format": (plain, lambda _: b"\xff not an entry", False, "unknown format byte"),
    "a tool call that is not one": (plain, lambda body: _with_tool_calls(body, [1]), False,
                                    "its tool call 1 is not one: it: must be an object"),
    "a key not in the keyring": (_sealed, bytes, True,
                                 "it is encrypted with key id 'old', which this store's "
                                 "keyring does not hold"),
}


def _store(tmp_path: Path, kind: str) -> tuple[str, dict[str, str], str]:
    """A store whose session 'broken' has seq 2 damaged: its URL, the CLI's
    environment, and the reason doctor gives for the damage."""
    fill, damaged, sealed, reason = DAMAGES[kind]
    path = tmp_path / "damaged.db"
    fill(path)
    damage(path, "broken", 2, damaged)
    return f"sqlite:///{path}", {"CHATLEDGER_KEYRING": NEW_KEY_ENV} if sealed else {}, reason


def _run(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(main, list(args), env=env or None)


def _doctor_says(url: str, env: dict[str, str], reason: str) -> None:
    """The reason is the one doctor gives for the same entry."""
    options = {"encryption": NEW_KEY} if env else {}
    entries = {c.name: c for c in diagnose(url, **options).checks}["entries"]
    assert entries.status == "fail" and reason in entries.detail and "(seq 2)" in entries.detail


@pytest.mark.parametrize("kind", list(DAMAGES))
def test_show_prints_the_readable_messages_and_the_damaged_one_in_its_place(
        tmp_path: Path, kind: str) -> None:
    url, env, reason = _store(tmp_path, kind)
    result = _run(env, "show", "broken", "--url", url)
    assert result.exit_code == DAMAGED_EXIT, result.output
    lines = result.stdout.splitlines()[2:]
    sealed = kind == "a key not in the keyring"  # intact, but the keyring cannot open it
    label, what = ("SEALED", "cannot be opened") if sealed else ("DAMAGED", "cannot be decoded")
    assert ["first, readable" in lines[0], label in lines[1],
            "third, readable" in lines[2], "fourth, readable" in lines[3]] == [True] * 4
    assert lines[1].split()[:2] == ["2", label]
    assert f"stored entry seq=2 {what}: {reason}" in lines[1]
    assert "second" not in result.stdout
    assert result.stderr.startswith("1 of 4 messages could not be read: seq 2 (")
    assert reason in result.stderr
    assert not [word for word in INTERNALS if word in result.output]
    _doctor_says(url, env, reason)


@pytest.mark.parametrize("kind", list(DAMAGES))
def test_show_json_gives_the_damaged_entry_as_an_object_with_its_seq_and_reason(
        tmp_path: Path, kind: str) -> None:
    url, env, reason = _store(tmp_path, kind)
    result = _run(env, "show", "broken", "--json", "--url", url)
    assert result.exit_code == DAMAGED_EXIT, result.output
    shown = json.loads(result.stdout)
    assert [m["seq"] for m in shown["messages"]] == [1, 2, 3, 4]
    damaged = shown["messages"][1]
    assert damaged["damaged"] is True and damaged["sealed"] is (kind == "a key not in the keyring")
    assert reason in damaged["reason"]
    what = "cannot be opened" if damaged["sealed"] else "cannot be decoded"
    assert damaged["error"] == f"stored entry seq=2 {what}: {damaged['reason']}"
    assert shown["damaged_seqs"] == [2]
    assert [m["content"] for m in shown["messages"] if not m.get("damaged")] == [
        "first, readable", "third, readable", "fourth, readable"]
    assert "1 of 4 messages could not be read: seq 2" in result.stderr
    assert not [word for word in INTERNALS if word in result.output]


def test_show_of_a_window_without_the_damaged_entry_is_clean(tmp_path: Path) -> None:
    url, env, _ = _store(tmp_path, "unknown format")
    result = _run(env, "show", "broken", "--last", "2", "--url", url)
    assert result.exit_code == 0 and "DAMAGED" not in result.stdout
    assert "third, readable" in result.stdout and not result.stderr


def _with_a_readable_session(url: str, env: dict[str, str]) -> None:
    """A session 'a' sorted before 'broken': an export writes it first."""
    with open_store(url, **({"encryption": NEW_KEY} if env else {})) as store:
        store.session("a").append([user("all fine")])


def test_export_fails_naming_session_and_seq_and_leaves_no_partial_file(
        tmp_path: Path) -> None:
    url, env, reason = _store(tmp_path, "unknown format")
    _with_a_readable_session(url, env)
    out = tmp_path / "all.jsonl"
    result = _run(env, "export", "--url", url, "--out", str(out))
    assert result.exit_code == 1
    assert f"session 'broken': stored entry seq=2 cannot be decoded: {reason}" in result.stderr
    assert "nothing exported" in result.stderr and "--skip-damaged" in result.stderr
    assert not [word for word in INTERNALS if word in result.output]
    assert not out.exists()  # session 'a' was written first: no file that looks whole


def test_a_failed_export_leaves_the_file_already_at_out_as_it_was(tmp_path: Path) -> None:
    """An earlier export at --out is someone's backup: an export that stops part way
    must not truncate or remove it, nor leave its temporary file beside it."""
    url, env, _ = _store(tmp_path, "unknown format")
    _with_a_readable_session(url, env)
    out = tmp_path / "all.jsonl"
    out.write_text("the earlier export\n")
    out.chmod(0o640)
    result = _run(env, "export", "--url", url, "--out", str(out))
    assert result.exit_code == 1 and f"nothing exported ({out} not written)" in result.stderr
    assert out.read_text() == "the earlier export\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".all")) == []
    replaced = _run(env, "export", "--skip-damaged", "--url", url, "--out", str(out))
    assert replaced.exit_code == DAMAGED_EXIT and "all fine" in out.read_text()
    assert out.stat().st_mode & 0o777 == 0o640  # the file's mode, not the temporary's 0600


def test_an_export_through_a_link_or_into_a_pipe_writes_where_it_points(
        tmp_path: Path) -> None:
    """--out naming a link replaces the file it links to, not the link; naming a pipe
    (or a device such as /dev/stdout) writes into it, never replaces it with a file."""
    import os
    import threading

    url = f"sqlite:///{tmp_path}/ok.db"
    with open_store(url) as store:
        store.session("a").append([user("all fine")])
    real = tmp_path / "real.jsonl"
    real.write_text("old\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    assert _run({}, "export", "--url", url, "--out", str(link)).exit_code == 0
    assert link.is_symlink() and "all fine" in real.read_text()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    result = _run({}, "export", "--url", url, "--out", str(fifo))
    reader.join(timeout=10)
    assert result.exit_code == 0 and got and "all fine" in got[0]
    assert fifo.is_fifo()  # written into, not replaced by a file


def test_export_to_standard_output_says_the_lines_written_are_not_the_whole(
        tmp_path: Path) -> None:
    url, env, _ = _store(tmp_path, "not JSON")
    _with_a_readable_session(url, env)
    result = _run(env, "export", "--url", url)
    assert result.exit_code == 1
    assert "session 'broken': stored entry seq=2 cannot be decoded" in result.stderr
    assert "incomplete" in result.stderr


@pytest.mark.parametrize("kind", ["unknown format", "a key not in the keyring"])
def test_export_skip_damaged_writes_every_readable_message_and_lists_what_it_left_out(
        tmp_path: Path, kind: str) -> None:
    url, env, reason = _store(tmp_path, kind)
    _with_a_readable_session(url, env)
    out = tmp_path / "all.jsonl"
    result = _run(env, "export", "--skip-damaged", "--url", url, "--out", str(out))
    assert result.exit_code == DAMAGED_EXIT, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["session"], r["seq"]) for r in lines] == [
        ("a", 1), ("broken", 1), ("broken", 3), ("broken", 4)]
    assert "left out 1 damaged entry" in result.stderr
    assert f"session 'broken' seq 2 ({reason}" in result.stderr
    assert not [word for word in INTERNALS if word in result.output]


def test_export_skip_damaged_of_a_clean_store_exits_0(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'clean.db'}"
    _with_a_readable_session(url, {})
    result = _run({}, "export", "--skip-damaged", "--url", url)
    assert result.exit_code == 0 and json.loads(result.stdout)["content"] == "all fine"
    assert "left out" not in result.stderr


def test_an_entry_lost_under_the_store_is_shown_in_its_place_and_stops_export(
        tmp_path: Path) -> None:
    """A row deleted by hand: show says which seq is gone (exit 3), export stops on it
    (exit 1), doctor fails; none of them gives a shorter history as the whole."""
    import sqlite3

    path = tmp_path / "lost.db"
    plain(path)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM entries WHERE sid = 'broken' AND seq = 3")
    db.close()
    url = f"sqlite:///{path}"
    shown = _run({}, "show", "broken", "--json", "--url", url)
    assert shown.exit_code == DAMAGED_EXIT, shown.output
    assert json.loads(shown.stdout)["damaged_seqs"] == [3]
    assert "seq 3 (no entry is stored at this seq" in shown.stderr
    exported = _run({}, "export", "--url", url, "--out", str(tmp_path / "out.jsonl"))
    assert exported.exit_code == 1 and "stored entry seq=3" in exported.stderr
    assert not (tmp_path / "out.jsonl").exists()
    assert not [word for word in INTERNALS if word in shown.output + exported.output]
    entries = {c.name: c for c in diagnose(url).checks}["entries"]
    assert entries.status == "fail" and "(seq 3)" in entries.detail
