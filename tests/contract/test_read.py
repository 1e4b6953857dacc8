"""Windowed reads, trim, delete, info, and loss detection (promises 2, 6, 8)."""

from __future__ import annotations

import pytest

from chatledger import MemoryLostError, Session, Store, user


def _fill(session: Session, count: int) -> None:
    session.append([user(f"m{i}") for i in range(1, count + 1)])


def test_read_last_n(store: Store) -> None:
    session = store.session("s")
    _fill(session, 10)
    history = session.read(last=3)
    assert [m.seq for m in history] == [8, 9, 10]
    assert [m.text for m in history] == ["m8", "m9", "m10"]
    assert history.version == 10
    assert len(session.read(last=50)) == 10
    assert session.read(last=0).messages == []


def test_read_after_with_limit(store: Store) -> None:
    session = store.session("s")
    _fill(session, 10)
    assert [m.seq for m in session.read(after=5, limit=2)] == [6, 7]
    assert [m.seq for m in session.read(after=8)] == [9, 10]
    assert [m.seq for m in session.read(limit=2)] == [1, 2]
    assert session.read(after=10).messages == []
    assert session.read(after=99).messages == []


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"last": 2, "after": 1}, ValueError),
        ({"last": 2, "limit": 1}, ValueError),
        ({"last": -1}, ValueError),
        ({"after": "3"}, TypeError),
        ({"min_version": -2}, ValueError),
    ],
)
def test_bad_read_arguments_are_refused(store: Store, kwargs: dict[str, object],
                                        error: type[Exception]) -> None:
    with pytest.raises(error):
        store.session("s").read(**kwargs)  # type: ignore[arg-type]


def test_trim_keeps_the_last_messages_and_never_lowers_the_version(store: Store) -> None:
    session = store.session("s")
    _fill(session, 10)
    assert session.trim(keep_last=4) == 6
    history = session.read()
    assert (history.first_seq, history.version) == (7, 10)
    assert [m.seq for m in history] == [7, 8, 9, 10]
    assert [m.seq for m in session.read(after=2, limit=2)] == [7, 8]
    assert [m.seq for m in session.read(last=10)] == [7, 8, 9, 10]
    assert session.trim(keep_last=10) == 0
    ack = session.append([user("next")])
    assert (ack.first_seq, ack.version) == (11, 11)
    info = session.info()
    assert info is not None
    assert (info.version, info.count, info.first_seq) == (11, 5, 7)


def test_trim_to_nothing_keeps_the_version(store: Store) -> None:
    session = store.session("s")
    _fill(session, 3)
    assert session.trim(keep_last=0) == 3
    history = session.read()
    assert (history.messages, history.version, history.first_seq) == ([], 3, 4)
    info = session.info()
    assert info is not None
    assert (info.count, info.version) == (0, 3)
    assert session.read(min_version=3).version == 3


def test_trim_of_a_missing_session_does_nothing(store: Store) -> None:
    assert store.session("nobody").trim(keep_last=5) == 0
    assert store.session("nobody").info() is None
    with pytest.raises(ValueError, match="keep_last"):
        store.session("nobody").trim(keep_last=-1)


def test_info_reports_times_from_the_store_clock(store: Store) -> None:
    session = store.session("s")
    _fill(session, 2)
    info = session.info()
    assert info is not None
    assert (info.version, info.count, info.first_seq) == (2, 2, 1)
    assert info.created_at <= info.updated_at
    assert info.expires_at is None


def test_delete_removes_the_whole_session(store: Store) -> None:
    session = store.session("s")
    _fill(session, 3)
    assert session.delete() is True
    assert session.delete() is False
    assert session.info() is None
    assert session.read().version == 0
    assert list(store.sessions()) == []
    assert session.append([user("again")]).version == 1  # a new ledger starts from 1


def test_min_version_detects_a_session_deleted_behind_our_back(store: Store) -> None:
    session = store.session("s")
    ack = session.append([user("remember me")])
    assert session.read(last=5, min_version=ack.version).version == 1
    store.session("s").delete()  # another process, an operator, an eviction...
    with pytest.raises(MemoryLostError) as caught:
        session.read(last=5, min_version=ack.version)
    assert (caught.value.expected, caught.value.found) == (1, 0)
    assert "restarted empty" in str(caught.value)


def test_min_version_is_checked_against_the_version_not_the_window(store: Store) -> None:
    session = store.session("s")
    _fill(session, 5)
    assert session.read(last=1, min_version=5).version == 5
    with pytest.raises(MemoryLostError):
        session.read(last=1, min_version=6)


def test_versions_never_go_down_across_reads(store: Store) -> None:
    session = store.session("s")
    seen = 0
    for turn in range(20):
        session.append([user(f"t{turn}")])
        if turn % 7 == 6:
            session.trim(keep_last=2)
        version = session.read(last=2).version
        assert version > seen
        seen = version
    assert seen == 20


@pytest.mark.parametrize("huge", [2**53, 2**63, 10**30])
def test_windows_larger_than_any_ledger_mean_all_of_it(store: Store, huge: int) -> None:
    session = store.session("s")
    _fill(session, 5)
    assert [m.seq for m in session.read(last=huge)] == [1, 2, 3, 4, 5]
    assert [m.seq for m in session.read(limit=huge)] == [1, 2, 3, 4, 5]
    assert [m.seq for m in session.read(after=3, limit=huge)] == [4, 5]
    assert session.read(after=huge).messages == []
    assert session.read(after=huge, limit=huge).version == 5
