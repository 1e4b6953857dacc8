"""``seed_session``'s transcripts, read as ``chatledger export`` writes them: an export
of several sessions is refused (seeding it would merge them), an exported message's
data comes back, and a refused record is named by its place in the transcript."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from chatledger import InvalidMessage, Message, open_store, user
from chatledger.testing._plugin.seed import load_transcript, seed
from chatledger.transfer import export_sessions


def _exported(tmp_path: Path, *sessions: str) -> Path:
    with open_store("memory://") as store:
        for name in sessions:
            store.session(name).append([user(f"{name} 1"), user(f"{name} 2")])
        store.session(sessions[0]).append([Message(role="system", content="blob",
                                                   data=b"\x00\xffbytes")])
        out = io.StringIO()
        export_sessions(store, out)
    path = tmp_path / "export.jsonl"
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


def test_an_export_of_several_sessions_is_refused_not_merged(tmp_path: Path) -> None:
    path = _exported(tmp_path, "ada", "bob")
    with pytest.raises(ValueError, match=r"the lines of 2 sessions \('ada', 'bob'\)"):
        load_transcript(path)


def test_an_exported_message_keeps_its_data(tmp_path: Path) -> None:
    messages = load_transcript(_exported(tmp_path, "ada"))
    assert [m.text for m in messages] == ["ada 1", "ada 2", "blob"]
    assert messages[-1].data == b"\x00\xffbytes"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"role": "user", "content": "x", "data_b64": "!!"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"transcript\[0\]\.data_b64: not base64"):
        load_transcript(bad)


def test_an_export_whose_text_holds_line_separators_seeds_whole(tmp_path: Path) -> None:
    # The export writes U+2028, U+2029 and U+0085 as they are: only \n ends a line.
    text = "one\u2028two\u2029three\x85four\x1cfive"
    with open_store("memory://") as store:
        store.session("ada").append([user(text)])
        out = io.StringIO()
        export_sessions(store, out)
    path = tmp_path / "export.jsonl"
    path.write_text(out.getvalue(), encoding="utf-8")
    assert [m.text for m in load_transcript(path)] == [text]
    path.write_text(out.getvalue() + '{"role": "user",\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"export\.jsonl, line 2: not JSON \(Expecting"):
        load_transcript(path)


@pytest.mark.parametrize(("record", "message"), [
    ({"role": "user"}, r"transcript\[1\]: no 'content'"),
    ({"content": "x"}, r"transcript\[1\]: no 'role'"),
    ({"role": "user", "content": "x", "created_at": "yesterday"},
     r"transcript\[1\]\.created_at: 'yesterday' is not an ISO 8601 time"),
])
def test_a_bad_record_is_named_by_its_place(record: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_transcript([{"role": "user", "content": "fine"}, record])


def test_a_record_the_store_refuses_is_named_by_its_place_in_the_transcript() -> None:
    with open_store("memory://") as store:
        session = store.session("s")
        with pytest.raises(InvalidMessage) as refused:
            seed(session, [{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}])
        assert refused.value.field == "transcript[1].role"
        assert str(refused.value).startswith("transcript[1].role: 'bot' is not one of")
        assert session.info() is None  # nothing written
