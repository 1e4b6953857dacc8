"""The command line, run as a user runs it: real stores, real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from chatledger import assistant, open_store, tool, user
from chatledger._cli import main
from chatledger._cli.support_agent import recall, reply
from tests.cli.test_options import listed


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/cli.db"


def test_the_demo_continues_the_first_process_memory_in_a_second(tmp_path: Path) -> None:
    # As the README runs it: the default URL, in the current directory.
    result = subprocess.run([sys.executable, "-m", "chatledger", "demo", "--session", "d1"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    first, second = out.split("--- process 2")
    assert "loaded 0 messages (version 0)" in first
    assert "loaded 4 messages (version 4)" in second
    assert "refund R-48213 for order #48213" in second and "Dana" in second
    assert first.split("[pid ")[1].split("]")[0] != second.split("[pid ")[1].split("]")[0]
    assert "The session is at version 6" in out
    with open_store("sqlite:///" + str(tmp_path / "chatledger.db")) as store:
        assert store.session("d1").read().version == 6


def test_demo_url_comes_from_the_environment(url: str) -> None:
    result = CliRunner().invoke(main, ["demo"], env={"CHATLEDGER_URL": url})
    assert result.exit_code == 0, result.output
    session = result.output.split("session ")[1].split()[0]
    assert session.startswith("demo-")
    with open_store(url) as store:
        assert store.session(session).info().version == 6  # type: ignore[union-attr]


def test_demo_part_refuses_lost_memory(url: str) -> None:
    result = CliRunner().invoke(main, ["--url", url, "demo-part", "--session", "gone",
                                       "--part", "2", "--min-version", "4"])
    assert result.exit_code == 1
    assert "MemoryLostError" in result.output and "version 4" in result.output


def test_a_demo_on_a_bad_url_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["--url", "nosuch://x", "demo"])
    assert result.exit_code == 2
    assert "unknown store URL scheme" in result.output


def test_a_demo_on_memory_is_refused_before_it_starts() -> None:
    # Its second process would start on an empty memory:// store and fail halfway.
    result = CliRunner().invoke(main, ["--url", "memory://", "demo"])
    assert result.exit_code == 2
    assert "memory:// lives in one" in result.output
    assert "process 1" not in result.output


def test_a_demo_never_replays_its_script_onto_an_existing_session(url: str) -> None:
    assert CliRunner().invoke(main, ["--url", url, "demo-part", "--session", "d",
                                     "--part", "1"]).exit_code == 0
    again = CliRunner().invoke(main, ["--url", url, "demo", "--session", "d"])
    assert again.exit_code == 1
    assert "session 'd' already exists (version 4)" in again.output
    with open_store(url) as store:
        assert store.session("d").read().version == 4


def test_show_prints_the_state_and_messages(url: str) -> None:
    with open_store(url) as store:
        store.session("s").append([
            user("where is my order?"),
            assistant("", tool_calls=[{"id": "c1", "name": "track", "args": {"n": 1}}]),
            tool("in transit", tool_call_id="c1"),
        ])
    result = CliRunner().invoke(main, ["--url", url, "show", "s"])
    assert result.exit_code == 0, result.output
    assert "session s: version 3, 3 messages, seqs 1..3" in result.output
    assert '-> track({"n":1}) [c1]' in result.output
    assert "[result of c1] in transit" in result.output
    result = CliRunner().invoke(main, ["--url", url, "show", "s", "--last", "1", "--json"])
    shown = json.loads(result.output)
    assert (shown["session"], shown["version"], shown["count"]) == ("s", 3, 3)
    record = shown["messages"][0]
    assert (record["seq"], record["role"], record["tool_call_id"]) == (3, "tool", "c1")


def test_show_of_a_missing_session_fails(url: str) -> None:
    open_store(url).close()  # the database exists; the session does not
    result = CliRunner().invoke(main, ["--url", url, "--namespace", "ns", "show", "nobody"])
    assert result.exit_code == 1
    assert "no session 'nobody' in namespace 'ns'" in result.output


def test_sessions_lists_ids_by_literal_prefix(url: str) -> None:
    with open_store(url) as store:
        for sid in ("a*1", "a*2", "ab"):
            store.session(sid).append([user("x")])
    result = CliRunner().invoke(main, ["--url", url, "sessions", "--prefix", "a*", "--json"])
    assert listed(result) == ["a*1", "a*2"]


def test_the_agent_answers_from_memory() -> None:
    assert reply([], "I want a refund") == "I can help with a refund. What is your order number?"
    assert reply([], "When will it ship?") == "Happy to check. What is your order number?"
    assert reply([], "I'm Ana") == "Nice to meet you, Ana. How can I help?"
    assert reply([], "hello") == "How can I help?"
    history = [user("this is Bo, order #12345"), assistant("ok")]
    assert recall(history).name == "Bo" and recall(history).order == "12345"
    assert "order #12345" in reply(history, "refund please")


def test_the_url_may_carry_the_namespace(url: str) -> None:
    with open_store(url, namespace="bots") as store:
        store.session("s").append([user("hello")])
    in_url = f"{url}?namespace=bots"
    assert listed(CliRunner().invoke(main, ["--url", in_url, "sessions", "--json"])) == ["s"]
    shown = CliRunner().invoke(main, ["--url", in_url, "show", "s"])
    assert shown.exit_code == 0 and "hello" in shown.output
    assert CliRunner().invoke(main, ["--url", in_url, "doctor"]).exit_code == 0
    assert listed(CliRunner().invoke(main, ["--url", url, "sessions", "--json"])) == []


def test_read_only_commands_never_create_a_database(tmp_path: Path) -> None:
    typo = f"sqlite:///{tmp_path}/typo.db"
    for command in (["sessions"], ["show", "s"], ["doctor"]):
        result = CliRunner().invoke(main, ["--url", typo, *command])
        assert result.exit_code == 2
        assert "no SQLite database at" in result.output
    assert not (tmp_path / "typo.db").exists()


@pytest.mark.parametrize("command", [["sessions"], ["show", "s"], ["export", "--out", "-"],
                                     ["delete", "s", "--dry-run"]])
def test_commands_on_a_store_leave_a_file_holding_none_as_it_was(
        tmp_path: Path, command: list[str]) -> None:
    """Another program's database, or an empty file, is refused, not made a store."""
    import hashlib
    import sqlite3

    other = tmp_path / "checkpoints.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE checkpoints (x)")
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    for path in (other, empty):
        before = hashlib.sha256(path.read_bytes()).hexdigest()
        result = CliRunner().invoke(main, ["--url", f"sqlite:///{path}", *command])
        assert result.exit_code == 2, result.output
        assert "holds no chatledger store (an empty file, or another program's database): " \
            "a command that only reads makes none there" in result.output
        assert "create=false" not in result.output  # an option the user did not type
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before
        assert not Path(f"{path}-wal").exists()


def test_a_bad_session_id_is_one_line_not_a_traceback(url: str) -> None:
    with open_store(url) as store:
        store.session("s").append([user("x")])
    result = CliRunner().invoke(main, ["--url", url, "show", ""])
    assert result.exit_code == 2
    assert "session id must not be empty" in result.output
    assert "Traceback" not in result.output


def test_a_url_without_a_scheme_is_reported(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["--url", "chatledger.db", "sessions"])
    assert result.exit_code == 2
    assert "ConfigError: store URL 'chatledger.db' has no scheme" in result.output


def test_export_writes_json_lines_page_by_page(url: str, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from chatledger.transfer import _export

    monkeypatch.setattr(_export, "PAGE", 3)  # several pages from a short session
    with open_store(url) as store:
        store.session("a-1").append([user(f"m{i} 😀") for i in range(7)])
        store.session("a-2").append([assistant("", tool_calls=[
            {"id": "c", "name": "f", "args": {"x": [1]}}])])
        store.session("b").append([user("other")])
        store.session("a-1").trim(keep_last=5)
    result = CliRunner().invoke(main, ["--url", url, "export", "--prefix", "a-"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["session"], r["seq"]) for r in lines] == [
        ("a-1", 3), ("a-1", 4), ("a-1", 5), ("a-1", 6), ("a-1", 7), ("a-2", 1)]
    assert lines[0]["content"] == "m2 😀"
    assert lines[-1]["tool_calls"] == [{"id": "c", "name": "f", "args": {"x": [1]}}]
    out = tmp_path / "b.jsonl"
    assert CliRunner().invoke(main, ["--url", url, "export", "b", "--out", str(out)]).exit_code == 0
    assert json.loads(out.read_text())["content"] == "other"
    everything = CliRunner().invoke(main, ["--url", url, "export"]).stdout.splitlines()
    assert len(everything) == 7
    both = CliRunner().invoke(main, ["--url", url, "export", "b", "--prefix", "a"])
    assert both.exit_code == 2 and "not both" in both.output


def test_purge_asks_first_and_deletes_by_literal_prefix(url: str) -> None:
    with open_store(url) as store:
        for sid in ("a*1", "a*2", "ab", "b"):
            store.session(sid).append([user("x")])
    declined = CliRunner().invoke(main, ["--url", url, "purge", "--prefix", "a*"], input="n\n")
    assert declined.exit_code == 1
    assert "delete session(s) whose id starts with 'a*'" in declined.output
    assert "2 session(s)\n  a*1\n  a*2\ndelete?" in declined.output
    assert "nothing deleted" in declined.output
    done = CliRunner().invoke(main, ["--url", url, "purge", "--prefix", "a*"], input="y\n")
    assert "deleted 2 session(s)" in done.output
    assert listed(CliRunner().invoke(main, ["--url", url, "sessions", "--json"])) == ["ab", "b"]
    for wrong in (["purge"], ["purge", "--all", "--prefix", "a"], ["purge", "--prefix", ""]):
        assert CliRunner().invoke(main, ["--url", url, *wrong]).exit_code == 2
    everything = CliRunner().invoke(main, ["--url", url, "purge", "--all", "--yes"])
    assert "deleted 2 session(s)" in everything.output


def test_the_namespace_may_be_given_twice_if_it_is_the_same(url: str) -> None:
    with open_store(url, namespace="bots") as store:
        store.session("s").append([user("hello")])
    in_url = f"{url}?namespace=bots"
    same = CliRunner().invoke(main, ["--url", in_url, "sessions", "--json"],
                              env={"CHATLEDGER_NAMESPACE": "bots"})
    assert listed(same) == ["s"]
    other = CliRunner().invoke(main, ["--url", in_url, "--namespace", "cats", "sessions"])
    assert other.exit_code == 2
    assert "the URL says namespace 'bots', --namespace" in other.output
