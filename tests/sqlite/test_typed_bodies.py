"""An entry whose body SQLite holds as TEXT or a number (written by hand: ``||`` makes
TEXT of two blobs) is a corrupt entry, reported for its session and seq as any garbage
is, on every path that reads bodies; never a TypeError or a driver's decoding error."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from chatledger import CorruptEntryError, open_store, user
from chatledger._cli import main
from chatledger._sync.heads import first_entries, newest_entries, opened
from chatledger.langgraph import LedgerStore

# Each session's newest entry, rewritten straight in the file: TEXT that is UTF-8,
# TEXT that is not (Python's sqlite3 cannot even decode it to a str), an integer.
REWRITES = {"text": "x'01' || x'7b7b'", "bad-utf8": "CAST(x'01ff7b' AS TEXT)", "number": "42"}


def _stored(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/t.db"
    with open_store(url) as store:
        for session in REWRITES:
            store.session(session).append([user("first"), user("second")])
    with sqlite3.connect(tmp_path / "t.db") as db:
        for session, value in REWRITES.items():
            db.execute(f"UPDATE entries SET body = {value} WHERE sid = ? AND seq = 2",
                       (session,))
        kinds = db.execute("SELECT typeof(body) FROM entries WHERE seq = 2 ORDER BY sid")
        assert sorted(kind for (kind,) in kinds) == ["integer", "text", "text"]
    return url


def _refused(read: object, session: str, reason: str) -> None:
    with pytest.raises(CorruptEntryError) as caught:
        read()  # type: ignore[operator]
    assert (caught.value.session, caught.value.seq) == (session, 2)
    assert reason in str(caught.value)


REASONS = {"text": "its bytes are not valid JSON", "bad-utf8": "not valid UTF-8",
           "number": "unknown format byte b'4'"}


def test_reads_raise_corrupt_entry_for_its_seq(tmp_path: Path) -> None:
    url = _stored(tmp_path)
    with open_store(url) as store, open_store(url, ttl=3600, touch_on_read=True) as touching:
        for session, reason in REASONS.items():
            _refused(store.session(session).read, session, reason)
            _refused(touching.session(session).read, session, reason)  # the base's read
            assert [m.text for m in store.session(session).read(limit=1)] == ["first"]


def test_the_newest_entries_of_sessions_raise_it_too(tmp_path: Path) -> None:
    url = _stored(tmp_path)
    with open_store(url) as store:
        heads = list(newest_entries(store, ""))
        firsts = list(first_entries(store, "", "-"))
        assert [session for session, _ in heads] == sorted(REWRITES)
        assert [session for session, _ in firsts] == ["bad-utf8", "number", "text"]
        for head in (*heads, *firsts):
            _refused(lambda head=head: opened(store, head), head[0], REASONS[head[0]])


def _cli(url: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, [*args, "--url", url])
    return result.exit_code, result.output


def test_the_command_line_says_so_in_one_line(tmp_path: Path) -> None:
    url = _stored(tmp_path)
    code, output = _cli(url, "show", "text")  # the readable message, the other in its place
    assert code == 3 and "Traceback" not in output and "first" in output
    assert f"stored entry seq=2 cannot be decoded: {REASONS['text']}" in output
    code, output = _cli(url, "export", "--out", str(tmp_path / "out.jsonl"))
    assert code == 1 and "Traceback" not in output
    assert "session 'bad-utf8': stored entry seq=2 cannot be decoded" in output


def test_doctor_fails_a_store_item_stored_as_text(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/items.db"
    with LedgerStore.from_url(url) as items:
        items.put(("notes",), "n1", {"text": "fine"})
    with sqlite3.connect(tmp_path / "items.db") as db:
        db.execute("UPDATE entries SET body = x'01' || x'7b7b'")
    code, output = _cli(url, "doctor")
    assert code == 1, output
    assert ("FAIL  store items  1 of 1 LangGraph store item(s) cannot be read: "
            "namespace ('notes',) key 'n1' (its bytes are not valid JSON") in output
