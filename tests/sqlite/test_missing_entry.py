"""An entry lost under the store (its row deleted by hand, a damaged file) is loud: the
session holds every seq from its first to its version, so a read that lacks one raises
CorruptEntryError naming that seq, never returns a shorter history."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from chatledger import CorruptEntryError, Keyring, Store, open_store, user
from chatledger._backends.contract import RawHistory, ReadQuery
from chatledger._core import check_window
from chatledger._sync.heads import newest_entries
from chatledger._sync.store import read_each


def _lost(path: Path, seq: int) -> Store:
    store = open_store(f"sqlite:///{path}")
    store.session("s").append([user(f"m{n}") for n in range(1, 7)])
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM entries WHERE sid = 's' AND seq = ?", (seq,))
    db.close()
    return store


@pytest.mark.parametrize("read", [
    {}, {"last": 5}, {"after": 1, "limit": 3}, {"max_tokens": 10_000},
    {"with_summary": True}])
def test_a_read_of_a_window_lacking_an_entry_names_it(tmp_path: Path,
                                                      read: dict[str, object]) -> None:
    with _lost(tmp_path / "s.db", 3) as store:
        with pytest.raises(CorruptEntryError, match="lost under the store") as lost:
            store.session("s").read(**read)  # type: ignore[arg-type]
        assert lost.value.seq == 3 and lost.value.session == "s"
        assert [m.text for m in store.session("s").read(last=3)] == ["m4", "m5", "m6"]


def test_a_tool_reading_each_entry_shows_the_lost_one_in_its_place(tmp_path: Path) -> None:
    with _lost(tmp_path / "s.db", 3) as store:
        each, version = read_each(store.session("s"))
    assert version == 6
    assert [getattr(m, "text", None) for m in each] == ["m1", "m2", None, "m4", "m5", "m6"]
    assert isinstance(each[2], CorruptEntryError) and each[2].seq == 3


@pytest.mark.parametrize(("entries", "query", "missing"), [
    ([(2, b""), (3, b""), (4, b"")], ReadQuery(last=3), None),
    ([(2, b""), (4, b"")], ReadQuery(last=3), 3),
    ([(3, b""), (4, b"")], ReadQuery(last=3), 2),  # the oldest of the window
    ([(2, b""), (3, b"")], ReadQuery(last=3), 4),  # the newest
    ([], ReadQuery(last=3), 2),
    ([(3, b"")], ReadQuery(after=2, limit=1), None),
    ([], ReadQuery(after=4), None),  # past the version: nothing to hold
    ([(4, b"")], ReadQuery(after=0, limit=2), 2),  # first_seq 2: trimmed below is not lost
])
def test_the_window_check(entries: list[tuple[int, bytes]], query: ReadQuery,
                          missing: int | None) -> None:
    raw = RawHistory(entries, version=4, first_seq=2, ledger="l")
    if missing is None:
        check_window("s", raw, query)
        return
    with pytest.raises(CorruptEntryError) as found:
        check_window("s", raw, query)
    assert found.value.seq == missing


def test_no_session_has_no_window_to_check() -> None:
    check_window("s", RawHistory([], version=0, first_seq=1, ledger=None), ReadQuery(last=5))


@pytest.mark.parametrize(("column", "value"), [
    ("version", "6x"), ("first_seq", 9), ("first_seq", "one"), ("version", 1.5)])
def test_a_session_row_edited_by_hand_is_one_clear_error(
        tmp_path: Path, column: str, value: object) -> None:
    """SQLite keeps any value in any column: a hand's edit is said in one line, where
    arithmetic on it failed with a bare TypeError in every command."""
    from chatledger import BackendError

    path = tmp_path / "s.db"
    with open_store(f"sqlite:///{path}") as store:
        store.session("s").append([user("a"), user("b")])
        store.session("t").append([user("c")])
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE sessions SET {column} = ? WHERE sid = 's'", (value,))
    db.close()
    with open_store(f"sqlite:///{path}") as store:
        calls = [lambda: store.session("s").read(), lambda: store.session("s").info(),
                 lambda: list(newest_entries(store, ""))]
        if column == "version":  # an append reads the version only
            calls.append(lambda: store.session("s").append([user("c")]))
        for call in calls:
            with pytest.raises(BackendError, match=r"session 's': its stored state is "
                                                   r"damaged \(version .*, first seq .*\)"):
                call()
        assert [m.text for m in store.session("t").read()] == ["c"]


def test_a_session_row_edited_by_hand_can_still_be_removed(tmp_path: Path) -> None:
    """delete and forget_user read the row unchecked: the damage is not a dead end, and
    a user's other sessions are still forgotten."""
    path = tmp_path / "s.db"
    with open_store(f"sqlite:///{path}") as store:
        for sid in ("bad", "good", "gone"):
            store.session(sid, user="u1").append([user("x")])
    with sqlite3.connect(path) as db:
        db.execute("UPDATE sessions SET version = 'abc' WHERE sid IN ('bad', 'gone')")
    db.close()
    with open_store(f"sqlite:///{path}") as store:
        assert store.session("gone").delete()
        assert sorted(store.forget_user("u1").deleted) == ["bad", "good"]
        assert list(store.sessions()) == []


def test_the_delete_command_shows_and_removes_a_row_edited_by_hand(tmp_path: Path) -> None:
    """The error says to delete the session; `chatledger delete` did not, as it stopped
    at reading what it would show."""
    from click.testing import CliRunner

    from chatledger._cli import main

    path = tmp_path / "s.db"
    with open_store(f"sqlite:///{path}") as store:
        store.session("bad").append([user("x")])
        store.session("good").append([user("y")])
    with sqlite3.connect(path) as db:
        db.execute("UPDATE sessions SET version = 'abc' WHERE sid = 'bad'")
    db.close()
    url = f"sqlite:///{path}"
    dry = CliRunner().invoke(main, ["delete", "bad", "good", "--url", url, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "bad: its stored state cannot be read (" in dry.output
    assert "good: 1 message, version 1" in dry.output
    done = CliRunner().invoke(main, ["delete", "bad", "--url", url, "--yes"])
    assert done.exit_code == 0 and "deleted 1 session(s)" in done.output, done.output
    with open_store(url) as store:
        assert list(store.sessions()) == ["good"]


def test_rotate_key_stops_at_a_lost_entry_naming_it(tmp_path: Path) -> None:
    """A page lacking an entry was a short page, read as the last: the entries after
    it stayed on the old key while the run said every entry was current."""
    path = tmp_path / "s.db"
    _lost(path, 3).close()
    keyring = Keyring({"k1": Keyring.new_key()}, current="k1")
    with open_store(f"sqlite:///{path}", encryption=keyring) as store:
        with pytest.raises(CorruptEntryError, match="lost under the store") as lost:
            store.rotate_key()
        assert (lost.value.session, lost.value.seq) == ("s", 3)
