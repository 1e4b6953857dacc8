"""A session holding a damaged entry, damaged in the SQLite file itself: the inspector
shows every entry that decodes and the damaged one in its place, with its seq and
doctor's reason for it, never a server error or a traceback."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from chatledger import Keyring, assistant, open_store, system, user
from chatledger._doctor import diagnose
from chatledger._inspector.app import inspector_app
from tests.damaged_entries import INTERNALS, NEW_KEY, OLD_KEY, damage, plain

from ._data import CHAT_THREAD, NAMESPACE, run_chat_thread


def _fill(path: Path, sealed_with: Keyring | None = None) -> None:
    """Four messages; the second carries data (stored with a length head) and, given
    ``sealed_with``, is sealed with a key the inspector's keyring will not hold."""
    url = f"sqlite:///{path}"
    with open_store(url, encryption=NEW_KEY) as store:
        store.session("broken").append([user("first, readable")])
    with open_store(url, encryption=sealed_with or NEW_KEY) as store:
        store.session("broken").append([assistant("second", data=b"\x00" * 64)])
    with open_store(url, encryption=NEW_KEY) as store:
        store.session("broken").append([user("third, readable"), assistant("fourth, readable")])


DAMAGES: dict[str, tuple[Callable[[Path], None], Callable[[bytes], bytes], Keyring | None, str]] = {
    "not JSON": (plain, lambda _: b"\x01{not json", None, "its bytes are not valid JSON"),
    "truncated": (plain, lambda body: body[:12], None,
                  "truncated: the head announces"),
    "unknown format": (plain, lambda _: b"\xff not an entry", None, "unknown format byte"),
    "a key not in the keyring": (lambda path: _fill(path, OLD_KEY), bytes, NEW_KEY,
                                 "it is encrypted with key id 'old', which this store's "
                                 "keyring does not hold"),
}


@pytest.mark.parametrize("kind", list(DAMAGES))
def test_a_damaged_message_is_shown_in_its_place_among_the_readable_ones(
        tmp_path: Path, kind: str) -> None:
    fill, damaged, keyring, reason = DAMAGES[kind]
    path = tmp_path / "damaged.db"
    fill(path)
    damage(path, "broken", 2, damaged)
    options = {} if keyring is None else {"encryption": keyring}
    with TestClient(inspector_app(f"sqlite:///{path}", **options)) as client:
        listed = client.get("/sessions")
        page = client.get("/session", params={"id": "broken"})
    assert listed.status_code == 200 and ">broken</a>" in listed.text
    assert page.status_code == 200
    text = html.unescape(page.text)
    for readable in ("first, readable", "third, readable", "fourth, readable"):
        assert readable in text
    assert "second" not in text
    (box,) = re.findall(r'<div class="msg damaged" id="seq-2">(.*?)</pre>', text,
                        re.DOTALL)
    assert "seq 2" in box
    assert ("cannot be opened" if keyring else "damaged") in box
    what = "cannot be opened" if keyring else "cannot be decoded"
    assert f"stored entry seq=2 {what}: {reason}" in box
    assert not [word for word in INTERNALS if word in page.text]
    # The reason is the one doctor gives for the same entry.
    entries = {c.name: c for c in diagnose(f"sqlite:///{path}", **options).checks}["entries"]
    assert entries.status == "fail" and reason in entries.detail and "(seq 2)" in entries.detail


def test_a_window_without_damage_is_read_once(tmp_path: Path) -> None:
    from chatledger import _events as events

    path = tmp_path / "damaged.db"
    plain(path)
    damage(path, "broken", 2, lambda _: b"\xff not an entry")
    calls: list[events.Operation] = []
    with TestClient(inspector_app(f"sqlite:///{path}")) as client, \
            events.listening(calls.append):
        whole = client.get("/session", params={"id": "broken", "after": 2})
        damaged = client.get("/session", params={"id": "broken"})
    assert whole.status_code == damaged.status_code == 200
    assert 'class="msg damaged"' not in whole.text and 'class="msg damaged"' in damaged.text
    # info and one read for the whole window; the damaged one is read again, entry by entry
    assert [c.name for c in calls] == ["info", "read", "info", "read", "read"]


def _bad_bytes(url: str, session: str) -> tuple[int, str]:
    """The newest entry's bytes (doctor reads the newest entries of a session)."""
    with open_store(url, namespace=NAMESPACE) as store:
        info = store.session(session).info()
    assert info is not None
    damage(Path(url.removeprefix("sqlite:///")), session, info.version,
            lambda _: b"\x01{not json")
    return info.version, "its bytes are not valid JSON"


def _no_checkpoint(url: str, session: str) -> tuple[int, str]:
    """An entry that decodes as a message and claims to be a checkpoint, without one."""
    from chatledger.langgraph._entries import FORMAT

    with open_store(url, namespace=NAMESPACE) as store:
        ack = store.session(session).append([system("x", metadata={
            "langgraph": FORMAT, "kind": "CheckpointEntry", "id": "x", "parent": None})])
    return ack.version, "not a checkpoint ledger entry: its record has no field 'cp'"


@pytest.mark.parametrize("damage", [_bad_bytes, _no_checkpoint], ids=["bytes", "checkpoint"])
def test_a_thread_with_a_damaged_checkpoint_entry_says_so_and_shows_the_page(
        tmp_path: Path, damage: Callable[[str, str], tuple[int, str]]) -> None:
    from chatledger.langgraph._layout import session_id

    url = f"sqlite:///{tmp_path / 'thread.db'}"
    run_chat_thread(url)
    seq, reason = damage(url, session_id(CHAT_THREAD, ""))
    with TestClient(inspector_app(url, namespace=NAMESPACE)) as client:
        threads = client.get("/threads")
        page = client.get("/thread", params={"id": CHAT_THREAD})
    assert threads.status_code == 200 and CHAT_THREAD in threads.text
    assert page.status_code == 200
    text = html.unescape(page.text)
    assert (f"thread 'chat-thread' checkpoint_ns '': stored entry seq={seq} cannot be "
            f"decoded: {reason}") in text
    assert page.text.count('class="msg damaged"') == 1
    assert not [word for word in INTERNALS if word in page.text]
    # The reason is the one doctor gives for the same entry.
    entries = {c.name: c for c in diagnose(url, namespace=NAMESPACE).checks}["entries"]
    assert entries.status == "fail" and reason in entries.detail


def _checkpoints(url: str) -> dict[int, str]:
    """The chat thread's root checkpoints: seq -> checkpoint id."""
    from chatledger.langgraph._layout import session_id

    with open_store(url, namespace=NAMESPACE) as store:
        stored = store.session(session_id(CHAT_THREAD, "")).read().messages
    return {m.seq or 0: m.metadata["id"] for m in stored
            if m.metadata.get("kind") == "CheckpointEntry"}


def _thread_page(url: str) -> tuple[int, str]:
    with TestClient(inspector_app(url, namespace=NAMESPACE)) as client:
        page = client.get("/thread", params={"id": CHAT_THREAD})
    return page.status_code, html.unescape(page.text)


def test_a_damaged_checkpoint_entry_is_shown_in_its_place_among_newer_and_older_ones(
        tmp_path: Path) -> None:
    from chatledger.langgraph._layout import session_id

    url = f"sqlite:///{tmp_path / 'thread.db'}"
    run_chat_thread(url)
    checkpoints = _checkpoints(url)
    older, broken, *newer = sorted(checkpoints)  # the second checkpoint is damaged
    damage(Path(url.removeprefix("sqlite:///")), session_id(CHAT_THREAD, ""), broken,
           lambda _: b"\x01{not json")
    status, text = _thread_page(url)
    assert status == 200
    assert f"{len(checkpoints) - 1} checkpoint(s)" in text
    where = [text.index(f'id="cp-{checkpoints[seq]}"') for seq in (older, *newer)]
    box = text.index(f"stored entry seq={broken} cannot be decoded: its bytes are not "
                     "valid JSON")
    assert where == sorted(where) and where[0] < box < where[1]  # in its place, by seq
    assert text.count('class="msg damaged"') == 1
    assert "other branch (not" not in text  # the line runs through the damaged entry
    assert "Order 123 has shipped" in text  # the latest state's conversation
    assert not [word for word in INTERNALS if word in text]


def _data_damaged(body: bytes) -> bytes:
    """An entry that still decodes, its data's first byte one no serializer reads
    (msgpack's never-used 0xc1): a checkpoint's serialized body, or a value's."""
    end = 5 + int.from_bytes(body[1:5], "big")  # format 2: the head, the JSON, the data
    return body[:end] + b"\xc1" + body[end + 1:]


UNLOADABLE = {"checkpoint": ("CheckpointEntry", "its checkpoint does not load"),
              "channel value": ("ItemsEntry", "the value of channel 'messages' does not load")}


@pytest.mark.parametrize("part", list(UNLOADABLE))
def test_a_checkpoint_that_does_not_load_is_shown_damaged(tmp_path: Path, part: str) -> None:
    from chatledger.langgraph._layout import session_id

    url = f"sqlite:///{tmp_path / 'thread.db'}"
    run_chat_thread(url)
    kind, reason = UNLOADABLE[part]
    sid = session_id(CHAT_THREAD, "")
    with open_store(url, namespace=NAMESPACE) as store:
        newest = max(m.seq or 0 for m in store.session(sid).read().messages
                     if m.metadata.get("kind") == kind)
    damage(Path(url.removeprefix("sqlite:///")), sid, newest, _data_damaged)
    checkpoints = _checkpoints(url)
    latest = max(checkpoints)
    status, text = _thread_page(url)
    assert status == 200
    (box,) = re.findall(r'<div class="msg damaged">(.*?)</pre>', text, re.DOTALL)
    assert (f"stored entry seq={latest} cannot be decoded: checkpoint "
            f"'{checkpoints[latest]}': {reason}") in box
    for seq in sorted(checkpoints)[:-1]:
        assert f'id="cp-{checkpoints[seq]}"' in text
    assert "The latest readable state's" in text  # the conversation is the step's before
    assert not [word for word in (*INTERNALS, "msgpack", "Error", "[0]") if word in text]


NOT_CALLS = {
    "a string": ("lookup_order", "its tool calls are a string, not a list"),
    "a number in the list": ([1], "its tool call 1 is not one: it: must be an object"),
    "a call without id": ([{"name": "x", "args": {}}], "its tool call 1 is not one: it.id: "
                                                       "must be a str"),
}


@pytest.mark.parametrize("case", NOT_CALLS)
def test_a_message_whose_tool_calls_are_not_calls_is_shown_damaged(tmp_path: Path,
                                                                    case: str) -> None:
    import orjson

    path = tmp_path / "damaged.db"
    plain(path)
    stored, reason = NOT_CALLS[case]

    def not_calls(body: bytes) -> bytes:
        end = 5 + int.from_bytes(body[1:5], "big")
        record = orjson.loads(body[5:end])
        header = orjson.dumps({**record, "tc": stored})
        return body[:1] + len(header).to_bytes(4, "big") + header + body[end:]

    damage(path, "broken", 2, not_calls)
    with TestClient(inspector_app(f"sqlite:///{path}")) as client:
        page = client.get("/session", params={"id": "broken"})
    assert page.status_code == 200
    text = html.unescape(page.text)
    for readable in ("first, readable", "third, readable", "fourth, readable"):
        assert readable in text
    (box,) = re.findall(r'<div class="msg damaged" id="seq-2">(.*?)</pre>', text, re.DOTALL)
    assert f"stored entry seq=2 cannot be decoded: {reason}" in box
    assert not [word for word in (*INTERNALS, "TypeError", "KeyError") if word in page.text]
