"""export and import: JSON Lines out and back in, keeping ids, seqs and timestamps."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from chatledger import Session, assistant, open_store, system, tool, user
from chatledger._cli import main
from chatledger.transfer import _export as exporting
from chatledger.transfer import _importing as importing


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/src.db"


def run(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=stdin)


def _fill(url: str, namespace: str = "default") -> None:
    """Sessions with every kind of message, one trimmed, one with odd text."""
    when = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=timezone(timedelta(hours=5)))
    with open_store(url, namespace=namespace) as store:
        store.session("a-1").append([user(f"m{i} 😀", created_at=when) for i in range(7)])
        store.session("a-1").trim(keep_last=4)  # seqs 4..7 remain
        store.session("a-2").append([
            system("be brief"),
            user([{"type": "text", "text": "look"}, {"type": "image_url", "url": "x"}],
                 metadata={"n": 1.5, "deep": {"x": [None, True]}}),
            assistant("", tool_calls=[{"id": "c", "name": "f", "args": {"x": [1]}}],
                      name="bot"),
            tool("res \u202e\x1b[31m", tool_call_id="c"),
        ])
        store.session("b").append([user("other")])


def _export(url: str, *args: str) -> str:
    result = run("export", "--url", url, *args)
    assert result.exit_code == 0, result.output
    return result.stdout


def _state(url: str) -> dict[str, tuple[int, int, int]]:
    with open_store(url) as store:
        infos = {sid: store.session(sid).info() for sid in store.sessions()}
    return {sid: (i.version, i.count, i.first_seq) for sid, i in infos.items() if i}


def test_a_round_trip_sqlite_redis_sqlite_is_exact(url: str, redis_url: str,
                                                   tmp_path: Path) -> None:
    _fill(url)
    exported = _export(url)
    redis = f"{redis_url}?namespace=rt-{uuid.uuid4().hex[:8]}"
    assert run("import", "--url", redis, stdin=exported).exit_code == 0
    back = f"sqlite:///{tmp_path}/back.db"
    assert run("import", "--url", back, stdin=_export(redis)).exit_code == 0
    assert _export(back) == exported  # ids, seqs, timestamps, every field, byte for byte
    assert _state(back) == _state(url) == {"a-1": (7, 4, 4), "a-2": (4, 4, 1), "b": (1, 1, 1)}
    with open_store(url) as source, open_store(back) as copy:
        assert copy.session("a-2").read().messages == source.session("a-2").read().messages


def test_a_round_trip_sqlite_postgres_redis_sqlite_is_exact(
        url: str, postgres_url: str, redis_url: str, tmp_path: Path) -> None:
    _fill(url)
    with open_store(url) as store:
        store.session("d").append([user("a file", data=bytes(range(256)) * 10)])
    exported = _export(url)
    postgres = f"{postgres_url}?namespace=rt-{uuid.uuid4().hex[:8]}"
    assert run("import", "--url", postgres, stdin=exported).exit_code == 0
    redis = f"{redis_url}?namespace=rt-{uuid.uuid4().hex[:8]}"
    assert run("import", "--url", redis, stdin=_export(postgres)).exit_code == 0
    back = f"sqlite:///{tmp_path}/back.db"
    assert run("import", "--url", back, stdin=_export(redis)).exit_code == 0
    assert _export(postgres) == _export(back) == exported  # byte for byte, every hop
    assert _state(postgres) == _state(url) == {"a-1": (7, 4, 4), "a-2": (4, 4, 1),
                                               "b": (1, 1, 1), "d": (1, 1, 1)}


def test_a_round_trip_sqlite_dynamodb_postgres_sqlite_is_exact(
        url: str, dynamodb_url: str, postgres_url: str, tmp_path: Path) -> None:
    _fill(url)
    with open_store(url) as store:
        store.session("d").append([user("a file", data=bytes(range(256)) * 2000)])  # 512 KB
    exported = _export(url)
    dynamodb = f"{dynamodb_url}&namespace=rt-{uuid.uuid4().hex[:8]}"
    assert run("import", "--url", dynamodb, stdin=exported).exit_code == 0
    postgres = f"{postgres_url}?namespace=rt-{uuid.uuid4().hex[:8]}"
    assert run("import", "--url", postgres, stdin=_export(dynamodb)).exit_code == 0
    back = f"sqlite:///{tmp_path}/back.db"
    assert run("import", "--url", back, stdin=_export(postgres)).exit_code == 0
    assert _export(dynamodb) == _export(back) == exported  # byte for byte, every hop
    assert _state(dynamodb) == _state(url) == {"a-1": (7, 4, 4), "a-2": (4, 4, 1),
                                               "b": (1, 1, 1), "d": (1, 1, 1)}


EVERY_BYTE = bytes(range(256))


def test_data_travels_as_base64_and_comes_back_byte_exact(url: str, redis_url: str,
                                                          tmp_path: Path) -> None:
    batch = [user("a file", data=EVERY_BYTE * 100), assistant("none"),
             tool("empty", tool_call_id="c", data=b"")]
    with open_store(url) as store:
        store.session("d").append(batch)
    exported = _export(url)
    lines = [json.loads(line) for line in exported.splitlines()]
    assert [line.get("data_b64") for line in lines] == [
        base64.b64encode(EVERY_BYTE * 100).decode(), None, ""]
    assert "data" not in lines[0]
    redis = f"{redis_url}?namespace=rt-{uuid.uuid4().hex[:8]}"
    assert run("import", "--url", redis, stdin=exported).exit_code == 0
    back = f"sqlite:///{tmp_path}/back.db"
    assert run("import", "--url", back, stdin=_export(redis)).exit_code == 0
    assert _export(back) == exported
    with open_store(back) as copy:
        assert copy.session("d").read().messages == batch
        assert copy.session("d").read().messages[0].data == EVERY_BYTE * 100


def _import_in_batches(url: str, target: str, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Import ``url``'s export into ``target``: how many messages each append carried
    (the copy checked equal to the source)."""
    appended: list[int] = []
    real = importing._append
    monkeypatch.setattr(importing, "_append",
                        lambda session, batch, version: appended.append(len(batch))
                        or real(session, batch, version))
    assert run("import", "--url", target, stdin=_export(url)).exit_code == 0
    assert _export(target) == _export(url)
    return appended


def test_an_import_sends_data_in_batches_of_bounded_size(
        url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_store(url) as store:
        store.session("d").append([user(str(n), data=bytes(300)) for n in range(5)])
    monkeypatch.setattr(importing, "BATCH_DATA_BYTES", 700)  # two messages' data a batch
    assert _import_in_batches(url, f"sqlite:///{tmp_path}/t.db", monkeypatch) == [2, 2, 1]


def test_an_import_weighs_content_blocks_tool_calls_and_metadata_too(
        url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A base64 image is text in a content block, not data: a batch of such messages
    was weighed as empty, one append however many megabytes they held."""
    image = {"type": "image", "source": {"type": "base64", "data": "A" * 300}}
    with open_store(url) as store:
        store.session("d").append(
            [user([image]) for _ in range(2)]
            + [assistant("", tool_calls=[{"id": f"c{n}", "name": "f",
                                          "args": {"blob": "B" * 300}}]) for n in range(2)]
            + [user("m", metadata={"note": "C" * 300}) for _ in range(2)])
    monkeypatch.setattr(importing, "BATCH_DATA_BYTES", 700)  # two such messages a batch
    assert _import_in_batches(url, f"sqlite:///{tmp_path}/t.db", monkeypatch) == [2, 2, 2]


def test_an_export_reads_fewer_messages_a_page_when_they_carry_much_data(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with open_store(url) as store:
        store.session("d").append([user(str(n), data=bytes(100)) for n in range(4)]
                                  + [user(str(n)) for n in range(4, 9)])
    monkeypatch.setattr(exporting, "PAGE", 4)
    monkeypatch.setattr(exporting, "PAGE_DATA_BYTES", 200)  # two messages of this data
    limits: list[int | None] = []
    real = Session.read
    monkeypatch.setattr(Session, "read", lambda self, **kw: limits.append(kw.get("limit"))
                        or real(self, **kw))
    lines = _export(url).splitlines()
    assert [json.loads(line)["seq"] for line in lines] == list(range(1, 10))
    assert limits == [4, 2, 4]  # 400 bytes in 4: then 2 a page; no data: whole pages again


def test_importing_twice_adds_nothing(url: str, tmp_path: Path) -> None:
    _fill(url)
    exported = _export(url)
    target = f"sqlite:///{tmp_path}/t.db"
    first = run("import", "--url", target, "--json", stdin=exported)
    assert json.loads(first.stdout)["added"] == 9
    second = run("import", "--url", target, "--json", stdin=exported)
    assert second.exit_code == 0
    assert json.loads(second.stdout)["added"] == 0
    assert {o["present"] for o in json.loads(second.stdout)["sessions"]} == {4, 1}
    assert _export(target) == exported


def test_an_import_continues_a_session_that_holds_its_beginning(url: str,
                                                                tmp_path: Path) -> None:
    _fill(url)
    target = f"sqlite:///{tmp_path}/t.db"
    run("import", "--url", target, stdin=_export(url, "b"))
    with open_store(url) as store:
        store.session("b").append([assistant("later")])
    result = run("import", "--url", target, stdin=_export(url, "b"))
    assert result.exit_code == 0 and "b: added 1, already there 1" in result.stdout
    assert _export(target) == _export(url, "b")


def test_a_session_holding_other_messages_is_refused_and_left_alone(
        url: str, tmp_path: Path) -> None:
    _fill(url)
    target = f"sqlite:///{tmp_path}/t.db"
    with open_store(target) as store:
        store.session("b").append([user("mine")])
    result = run("import", "--url", target, stdin=_export(url))
    assert result.exit_code == 1
    assert "b: added 0, already there 0; REFUSED: the target holds another message at seq 1" \
        in result.stdout  # its "mine" is not the file's message: none of the file's is there
    with open_store(target) as store:
        assert [m.text for m in store.session("b").read()] == ["mine"]
        assert store.session("a-2").info() is not None  # the other sessions came in


def test_a_dry_run_says_what_would_come_and_writes_nothing(url: str, tmp_path: Path) -> None:
    _fill(url)
    target = f"sqlite:///{tmp_path}/t.db"
    result = run("import", "--url", target, "--dry-run", stdin=_export(url))
    assert result.exit_code == 0
    assert "a-1: would add 4, already there 0" in result.stdout
    assert _state(target) == {}


def test_an_interrupted_import_of_a_trimmed_session_resumes(
        url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fill(url)
    exported = _export(url, "a-1")  # seqs 4..7
    target = f"sqlite:///{tmp_path}/t.db"
    monkeypatch.setattr(importing, "BATCH", 2)
    with open_store(target) as store:  # as if the first run died after one placeholder batch
        importing._fill_gap(store.session("a-1"), 0, 2)
    result = run("import", "--url", target, stdin=exported)
    assert result.exit_code == 0, result.output
    assert _export(target) == exported
    assert _state(target) == {"a-1": (7, 4, 4)}


def test_a_target_ending_before_the_files_first_seq_is_refused(url: str,
                                                                tmp_path: Path) -> None:
    _fill(url)
    target = f"sqlite:///{tmp_path}/t.db"
    with open_store(target) as store:
        store.session("a-1").append([user("one"), user("two")])
    result = run("import", "--url", target, stdin=_export(url, "a-1"))
    assert result.exit_code == 1
    assert "the target ends at seq 2 and the file goes on at seq 4" in result.stdout
    with open_store(target) as store:  # ending right before it: nothing tells them apart
        store.session("a-1").append([user("three")])
    result = run("import", "--url", target, stdin=_export(url, "a-1"))
    assert result.exit_code == 1
    assert "the target ends at seq 3 and the file goes on at seq 4" in result.stdout
    with open_store(target) as store:
        assert [m.text for m in store.session("a-1").read()] == ["one", "two", "three"]


def test_ids_stored_elsewhere_in_the_target_stop_that_session(url: str, tmp_path: Path) -> None:
    _fill(url)
    line = json.loads(_export(url, "b"))
    target = f"sqlite:///{tmp_path}/t.db"
    with open_store(target) as store:
        store.session("b").append([user("x", id=line["id"])])
    moved = json.dumps({**line, "seq": 2})
    result = run("import", "--url", target, stdin=json.dumps({**line, "id": "fresh"}) + "\n"
                 + moved + "\n")
    assert result.exit_code == 1
    assert "REFUSED" in result.stdout


@pytest.mark.parametrize(("line", "error"), [
    ("{nope", "line 2: not JSON"),
    ("[1]", "line 2: expected a JSON object, got list"),
    ('{"session": "s"}', "line 2: missing seq, role, content, id, created_at"),
    ('{"session": "s", "seq": 2, "role": "user", "content": "x", "id": "i2", '
     '"created_at": "2026-01-01T00:00:00+00:00", "colour": 1}', "unknown field 'colour'"),
    ('{"session": "s", "seq": 2, "role": "user", "content": "x", "id": "i2", '
     '"created_at": "yesterday"}', "created_at 'yesterday' is not an ISO 8601 time"),
    ('{"session": "s", "seq": 0, "role": "user", "content": "x", "id": "i2", '
     '"created_at": "2026-01-01T00:00:00+00:00"}', "seq must be a positive integer"),
    ('{"session": "", "seq": 2, "role": "user", "content": "x", "id": "i2", '
     '"created_at": "2026-01-01T00:00:00+00:00"}', "session must be a non-empty string"),
    ('{"session": "s", "seq": 3, "role": "user", "content": "x", "id": "i2", '
     '"created_at": "2026-01-01T00:00:00+00:00"}', "goes from seq 1 to 3"),
    ('{"session": "s", "seq": 2, "role": "robot", "content": "x", "id": "i2", '
     '"created_at": "2026-01-01T00:00:00+00:00"}', "line 2: role: 'robot' is not one of"),
    ('{"session": "s", "seq": 2, "role": "user", "content": "x", "id": "i1", '
     '"created_at": "2026-01-01T00:00:00+00:00"}', "line 2:"),
    ('{"session": "s", "seq": 2, "role": "user", "content": "x", "id": "i2", '
     '"created_at": "2026-01-01T00:00:00+00:00", "data_b64": "not base64!"}',
     "data_b64 is not base64 text"),
    ('{"session": "s", "seq": 2, "role": "user", "content": "x", "id": "i2", '
     '"created_at": "2026-01-01T00:00:00+00:00", "data_b64": 12}',
     "data_b64 is not base64 text (int)"),
    ('{"session": "s\\u0000", "seq": 1, "role": "user", "content": "x", "id": "i2", '
     '"created_at": "2026-01-01T00:00:00+00:00"}', "line 2:"),
])
def test_a_bad_line_is_named_and_nothing_is_written(tmp_path: Path, line: str,
                                                    error: str) -> None:
    good = ('{"session": "s", "seq": 1, "role": "user", "content": "x", "id": "i1", '
            '"created_at": "2026-01-01T00:00:00+00:00"}')
    target = f"sqlite:///{tmp_path}/t.db"
    result = run("import", "--url", target, stdin=f"{good}\n{line}\n")
    assert result.exit_code == 2, result.output
    assert error in result.output and "nothing imported" in result.output
    assert _state(target) == {}


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_a_refused_file_creates_no_store(tmp_path: Path, dry_run: list[str]) -> None:
    target = tmp_path / "new" / "t.db"
    result = run("import", "--url", f"sqlite:///{target}", *dry_run, stdin="not json\n")
    assert result.exit_code == 2 and "line 1: not JSON" in result.output, result.output
    assert not target.parent.exists()


def test_an_option_the_store_refuses_is_named_before_the_file_is_read(tmp_path: Path) -> None:
    result = run("import", "--url", f"sqlite:///{tmp_path}/t.db?max_message_bytes=0",
                 stdin="not json\n")
    assert result.exit_code == 2
    assert "max_message_bytes must be a positive int, got 0" in result.output, result.output


def test_export_of_a_missing_session_is_an_error_and_writes_nothing(url: str,
                                                                    tmp_path: Path) -> None:
    _fill(url)
    out = tmp_path / "out.jsonl"
    result = run("export", "b", "nope", "--out", str(out), "--url", url)
    assert result.exit_code == 1
    assert "no session 'nope' in namespace 'default'" in result.output
    assert not out.exists()


def _line(seq: int, message_id: str, session: str = "b") -> str:
    return json.dumps({"session": session, "seq": seq, "role": "user", "content": "x",
                       "id": message_id, "created_at": "2026-01-01T00:00:00+00:00"})


def test_an_id_repeated_across_batches_is_a_bad_line(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importing, "BATCH", 1)
    target = f"sqlite:///{tmp_path}/t.db"
    result = run("import", "--url", target, stdin=f"{_line(1, 'i')}\n{_line(2, 'i')}\n")
    assert result.exit_code == 2
    assert "line 2: id 'i' is on line 1 too" in result.output


@pytest.mark.parametrize(("lines", "why"), [
    ([(1, "x"), (2, "b"), (3, "dup")], "its ids are already in the target at seq 1, not 3"),
    ([(1, "x"), (2, "b"), (3, "dup"), (4, "new")],
     "stopped after 0 messages: messages[0].id: 'dup' is already"),
])
def test_ids_the_target_holds_at_other_seqs_stop_the_session(
        tmp_path: Path, lines: list[tuple[int, str]], why: str) -> None:
    """The target trimmed seq 1 (so the file's seq 1 counts as there) but keeps its id."""
    target = f"sqlite:///{tmp_path}/t.db"
    with open_store(target) as store:
        store.session("b").append([user("mine", id="dup")])
        store.session("b").append([user("b", id="b")])
        store.session("b").trim(keep_last=1)
    result = run("import", "--url", target,
                 stdin="".join(_line(seq, mid) + "\n" for seq, mid in lines))
    assert result.exit_code == 1
    assert why in result.stdout
    assert _state(target) == {"b": (2, 1, 2)}


def test_messages_the_target_trimmed_count_as_there(url: str, tmp_path: Path) -> None:
    _fill(url)
    exported = _export(url, "b")
    target = f"sqlite:///{tmp_path}/t.db"
    run("import", "--url", target, stdin=exported)
    with open_store(target) as store:
        store.session("b").trim(keep_last=0)
    again = run("import", "--url", target, stdin=exported)
    assert again.exit_code == 0 and "b: added 0, already there 1" in again.stdout


def test_a_session_trimmed_to_nothing_keeps_its_version_through_a_round_trip(
        url: str, redis_url: str, tmp_path: Path) -> None:
    with open_store(url) as store:
        store.session("e").append([user("x"), user("y")])
        store.session("e").trim(keep_last=0)  # version 2, no message left
        store.session("f").append([user("kept")])
    exported = _export(url)
    assert '{"session":"e","version":2}' in exported.splitlines()
    redis = f"{redis_url}?namespace=rt-{uuid.uuid4().hex[:8]}"
    assert run("import", "--url", redis, stdin=exported).exit_code == 0
    assert run("import", "--url", redis, stdin=exported).exit_code == 0  # twice: nothing new
    back = f"sqlite:///{tmp_path}/back.db"
    assert run("import", "--url", back, stdin=_export(redis)).exit_code == 0
    assert _state(back) == _state(url) == {"e": (2, 0, 3), "f": (1, 1, 1)}
    with open_store(back) as copy:
        copy.session("g").append([user("mine")])
    refused = run("import", "--url", back, stdin='{"session":"g","version":5}\n')
    assert refused.exit_code == 1 and "trimmed to nothing at version 5" in refused.output


@pytest.mark.parametrize("text", ['{"session":"e","version":0}\n',
                                  '{"session":"e","version":2}\n{"session":"e","version":3}\n'])
def test_a_bad_emptied_line_is_named(tmp_path: Path, text: str) -> None:
    result = run("import", "--url", f"sqlite:///{tmp_path}/t.db", stdin=text)
    assert result.exit_code == 2 and "line " in result.output


@pytest.mark.parametrize("text", [_line(10**12, "far") + "\n",
                                  '{"session":"b","version":1000000000000}\n'])
def test_a_session_that_would_take_too_many_placeholders_is_refused(
        tmp_path: Path, text: str) -> None:
    """Keeping seq 10**12 would mean writing (and trimming) 10**12 placeholders."""
    target = f"sqlite:///{tmp_path}/t.db"
    result = run("import", "--url", target, stdin=text + _line(1, "kept", session="c") + "\n")
    assert result.exit_code == 1
    assert "over the import's limit of 100,000" in result.output
    assert _state(target) == {"c": (1, 1, 1)}  # the rest of the file is imported
    assert run("import", "--dry-run", "--url", target, stdin=text).exit_code == 1


def test_the_summaries_count_one_session_and_one_message_in_the_singular(
        url: str, tmp_path: Path) -> None:
    with open_store(url) as store:
        store.session("only").append([user("hi")])
    exported = run("export", "--url", url, "--out", str(tmp_path / "one.jsonl"))
    assert exported.exit_code == 0, exported.output
    assert "exported 1 message from 1 session of namespace 'default'" in exported.output
    imported = run("import", str(tmp_path / "one.jsonl"), "--url", f"sqlite:///{tmp_path}/b.db")
    assert imported.exit_code == 0, imported.output
    assert "added 1 message to 1 session of 1 in the file; 0 refused" in imported.output
    again = run("import", str(tmp_path / "one.jsonl"), "--url", f"sqlite:///{tmp_path}/b.db")
    assert "added 0 messages to 0 sessions of 1 in the file; 0 refused" in again.output


def test_a_sessions_user_travels_so_forget_user_erases_the_copy(url: str,
                                                                tmp_path: Path) -> None:
    with open_store(url) as store:
        store.session("s1", user="ada").append([user("my card ends 4242")])
        store.session("s2", user="ada").append([user("x"), user("y")])
        store.session("s2").trim(keep_last=0)  # emptied: its one line names ada too
        store.session("s3").append([user("nobody's")])
    exported = _export(url)
    assert '{"session":"s2","version":2,"user":"ada"}' in exported.splitlines()
    assert '"user":' not in exported.splitlines()[-1]  # s3: untagged, as before
    copy = f"sqlite:///{tmp_path}/copy.db"
    assert run("import", "--url", copy, stdin=exported).exit_code == 0
    assert _export(copy) == exported  # byte for byte, the user included
    with open_store(copy) as store:
        assert store.session("s1").info().user == "ada"  # type: ignore[union-attr]
        assert store.forget_user("ada").deleted == ("s1", "s2")
        assert list(store.sessions()) == ["s3"]


def test_an_import_into_a_session_of_another_user_is_refused(url: str, tmp_path: Path) -> None:
    with open_store(url) as store:
        store.session("s1", user="ada").append([user("a")])
        store.session("s1", user="ada").append([user("b")])
    exported = _export(url)
    copy = f"sqlite:///{tmp_path}/copy.db"
    with open_store(copy) as store:
        store.session("s1", user="bob").append([user("a")])
    first = exported.splitlines()[0]
    with open_store(copy) as store:  # the same first message id: only the second appends
        store.session("s1").trim(keep_last=0)
    result = run("import", "--url", copy, stdin=exported)
    assert result.exit_code == 1, result.output
    assert "bob" in result.output and "ada" in result.output
    mixed = first + "\n" + exported.splitlines()[1].replace('"ada"', '"eve"') + "\n"
    bad = run("import", "--url", f"sqlite:///{tmp_path}/t.db", stdin=mixed)
    assert bad.exit_code == 2 and "line 2: session 's1' is of user 'eve'" in bad.output


@pytest.mark.parametrize("held", [1, 2], ids=["part", "all"])
def test_a_session_of_another_user_is_refused_alike_by_a_dry_run_and_a_run(
        url: str, tmp_path: Path, held: int) -> None:
    """Holding every message too: left tagged with the other user, forget_user of the
    file's user would not find the copy."""
    with open_store(url) as store:
        store.session("s", user="alice").append([user("a1", id="a1"), user("a2", id="a2")])
    exported = _export(url)
    copy = f"sqlite:///{tmp_path}/copy.db"
    with open_store(copy) as store:
        store.session("s", user="bob").append(
            [user("a1", id="a1"), user("a2", id="a2")][:held])
    said = "REFUSED: the target's session belongs to 'bob', the file's to 'alice'"
    dry = run("import", "--url", copy, "--dry-run", stdin=exported)
    real = run("import", "--url", copy, stdin=exported)
    assert dry.exit_code == real.exit_code == 1 and said in dry.output and said in real.output
    assert _state(copy) == {"s": (held, held, 1)}


@pytest.mark.parametrize("named", [True, False], ids=["named", "listed"])
def test_an_export_costs_one_info_and_one_read_per_session(url: str, named: bool) -> None:
    from chatledger import _events as events

    _fill(url)
    before = _export(url)
    calls: list[events.Operation] = []
    with events.listening(calls.append):
        out = _export(url, "a-1", "a-2", "b") if named else _export(url)
    assert out == before  # the output is unchanged; only the calls are counted
    per_session = {sid: sorted(c.name for c in calls if c.target == sid)
                   for sid in ("a-1", "a-2", "b")}
    assert per_session == {key: ["info", "read"] for key in ("a-1", "a-2", "b")}


def test_a_session_emptied_by_an_earlier_import_takes_what_came_after(
        url: str, tmp_path: Path) -> None:
    """The target ends right before the file, with no message of its own: it goes on."""
    with open_store(url) as store:
        store.session("s").append([user(t) for t in "abcd"])
        store.session("s").trim(keep_last=0)
    target = f"sqlite:///{tmp_path}/t.db"
    assert run("import", "--url", target, stdin=_export(url)).exit_code == 0
    with open_store(url) as store:
        store.session("s").append([user("e"), user("f")])
    grown = run("import", "--url", target, stdin=_export(url))
    assert grown.exit_code == 0, grown.output
    with open_store(target) as store:
        assert [(m.seq, m.text) for m in store.session("s").read()] == [(5, "e"), (6, "f")]


def test_an_emptied_session_of_another_user_is_refused_too(url: str, tmp_path: Path) -> None:
    with open_store(url) as store:
        store.session("s", user="alice").append([user("a"), user("b")])
        store.session("s").trim(keep_last=0)
    exported = _export(url)
    assert json.loads(exported) == {"session": "s", "version": 2, "user": "alice"}
    target = f"sqlite:///{tmp_path}/t.db"
    with open_store(target) as store:
        store.session("s", user="bob").append([user("a"), user("b")])
    said = "REFUSED: the target's session belongs to 'bob', the file's to 'alice'"
    for dry in (["--dry-run"], []):
        result = run("import", "--url", target, *dry, stdin=exported)
        assert result.exit_code == 1 and said in result.output, result.output
