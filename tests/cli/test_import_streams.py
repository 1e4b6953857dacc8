"""import is exact and streams: numbers come back as they were or the file is refused, and
memory does not grow with the file; chatledger.transfer is the API the CLI calls."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tracemalloc
from datetime import datetime
from pathlib import Path
from typing import Any

import coverage
import orjson
import pytest
from click.testing import CliRunner, Result

from chatledger import Session, Store, open_store, user
from chatledger._cli import main
from chatledger._errors import ConflictError
from chatledger.transfer import (
    BadRecord,
    ImportReport,
    export_sessions,
    import_sessions,
)
from chatledger.transfer import _importing as importing

WHEN = "2026-01-01T00:00:00+00:00"


def _record(seq: int = 1, session: str = "s", **fields: Any) -> dict[str, Any]:
    return {"session": session, "seq": seq, "role": "user", "content": "x", "id": f"i{seq}",
            "created_at": WHEN, **fields}


def _text(*records: dict[str, Any]) -> str:
    """Lines as the exporter writes them (orjson, no spaces): exact numbers, via json."""
    return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records)


def run(*args: str, stdin: str | bytes | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=stdin)


def _state(url: str) -> dict[str, int]:
    with open_store(url) as store:
        return {sid: store.session(sid).info().version  # type: ignore[union-attr]
                for sid in store.sessions()}


@pytest.fixture
def target(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/t.db"


@pytest.mark.parametrize(("fields", "error"), [
    ({"metadata": {"n": 2**64}},
     "line 2: metadata.n: integer 18446744073709551616 is outside the signed 64-bit range"),
    ({"metadata": {"n": -(2**63) - 1}},
     "line 2: metadata.n: integer -9223372036854775809 is outside the signed 64-bit range"),
    ({"metadata": {"n": 2**64 - 1}},  # orjson reads this one as an int: the store refuses it
     "line 2: metadata.n: integer 18446744073709551615 is outside"),
    ({"metadata": {"deep": {"list": [1, {"n": 2**70}]}}},
     "line 2: metadata.deep.list[1].n: integer 1180591620717411303424 is outside"),
    ({"content": [{"type": "text", "text": "t", "n": 2**64}]}, "line 2: content[0].n: integer"),
    ({"role": "assistant", "tool_calls": [{"id": "c", "name": "f", "args": {"x": -(2**80)}}]},
     "line 2: tool_calls[0].args.x: integer -1208925819614629174706176 is outside"),
])
def test_an_integer_append_would_refuse_is_refused_with_its_line_and_field(
        target: str, fields: dict[str, Any], error: str) -> None:
    result = run("import", "--url", target, stdin=_text(_record(1), _record(2, **fields)))
    assert result.exit_code == 2, result.output
    assert error in result.output and "nothing imported" in result.output
    assert "1.8446744073709552e+19" not in result.output
    assert _state(target) == {}  # line 1 was good, and is not imported either


@pytest.mark.parametrize(("text", "error"), [
    (_text(_record(1), _record(2**63 + 1)), "line 2: seq must be a positive integer (at most "
     "9223372036854775807), got 9223372036854775809"),
    ('{"session":"e","version":18446744073709551616}\n', "line 1: version must be"),
])
def test_a_seq_or_version_beyond_64_bits_is_refused(target: str, text: str, error: str) -> None:
    result = run("import", "--url", target, stdin=text)
    assert result.exit_code == 2, result.output
    assert error in result.output and "nothing imported" in result.output
    assert "1.8446744073709552e+19" not in result.output
    assert _state(target) == {}  # line 1 was good, and is not imported either


NUMBERS = [2**63 - 1, -(2**63), 0, -0.0, 0.1, 1.5, 1e300, 5e-324, 2.2250738585072014e-308,
           1.7976931348623157e308, 9007199254740993, 12345678901234567.0]


@pytest.mark.parametrize("long_run", [False, True])
def test_numbers_in_range_come_back_exactly(target: str, long_run: bool) -> None:
    # An id with 19 digits in a row sends its line to the exact (standard library)
    # parser; the others take orjson's: both must give back the same bytes.
    message_id = "1234567890123456789012" if long_run else "plain"
    text = _text(_record(1, id=message_id, metadata={"n": NUMBERS, "big": {"k": 2**63 - 1}}),
                 {"session": "e", "version": 3})
    assert run("import", "--url", target, stdin=text).exit_code == 0
    exported = run("export", "--url", target).stdout
    assert exported.splitlines()[1] == orjson.dumps({  # the exporter's order of fields
        "session": "s", "seq": 1, "role": "user", "content": "x", "id": message_id,
        "name": None, "tool_calls": [], "tool_call_id": None,
        "metadata": {"n": NUMBERS, "big": {"k": 2**63 - 1}}, "created_at": WHEN}).decode()
    lines = [orjson.loads(line) for line in exported.splitlines()]
    assert lines[0] == {"session": "e", "version": 3}
    assert lines[1]["metadata"]["n"] == NUMBERS
    assert [type(n) for n in lines[1]["metadata"]["n"]] == [type(n) for n in NUMBERS]


@pytest.mark.parametrize(("raw", "error"), [
    (b'{"session":"s","version":9223372036854775808}', "version must be a positive integer"),
    (_text(_record(metadata={"n": 0})).replace('"n":0', '"n":NaN').encode(), "not JSON"),
    (_text(_record(id="1234567890123456789", metadata={"n": 0})).replace(
        '"n":0', '"n":-Infinity').encode(), "-Infinity is not a JSON number"),
    (_text(_record(metadata={"n": 0})).replace('"n":0', '"n":1e400').encode(),
     "not JSON (number is infinity"),
    (_text(_record(id="1234567890123456789", metadata={"n": 0})).replace(
        '"n":0', '"n":1e400').encode(), "metadata.n: inf is not a finite number"),
    (_text(_record(metadata={"n": 0})).replace('"n":0', '"n":-' + "7" * 5000).encode(),
     "not JSON (an integer of 5000 digits, far outside the signed 64-bit range)"),
    (b"[" * 100_000 + b"]" * 100_000, "not JSON (depth limit exceeded"),
    (b"[" * 100_000 + b"1234567890123456789" + b"]" * 100_000, "not JSON (maximum recursion"),
    (b'{"session":"\xff"}', "not JSON"),
    (b'{"session":"\xff1234567890123456789"}', "not JSON (not UTF-8"),
    (_text(_record(content="y" * 2000)).encode(),
     "the message is 2,061 bytes encoded, over max_message_bytes=1,000"),
    (b'{"session":"s\\u0000","version":3}', "line 1: session id 's\\x00' contains a NUL"),
])
def test_a_line_append_would_refuse_raises_bad_record(raw: bytes, error: str) -> None:
    with open_store("memory://", max_message_bytes=1000) as store, \
            pytest.raises(BadRecord) as raised:
        import_sessions(store, io.BytesIO(raw))
    assert error in str(raised.value)
    assert raised.value.line == 1


def test_bad_record_names_the_field_apart() -> None:
    with open_store("memory://") as store, pytest.raises(BadRecord) as raised:
        import_sessions(store, io.BytesIO(_text(_record(metadata={"a": [2**64]})).encode()))
    assert (raised.value.line, raised.value.field) == (1, "metadata.a[0]")
    assert raised.value.reason.startswith("metadata.a[0]: integer 18446744073709551616")


class _Pipe(io.RawIOBase):
    """A stream that cannot seek, as standard input from a pipe."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = self._data.read(len(buffer))
        buffer[:len(chunk)] = chunk
        return len(chunk)


def _two_sessions() -> str:
    return _text(_record(1, "a"), _record(2, "a", data_b64="AAE="), _record(1, "b"))


@pytest.mark.parametrize("kind", ["pipe", "text pipe", "path", "str path", "text file"])
def test_an_import_reads_a_pipe_a_path_or_a_text_file(tmp_path: Path, kind: str) -> None:
    file = tmp_path / "in.jsonl"
    file.write_text(_two_sessions())
    sources: dict[str, Any] = {
        "pipe": lambda: io.BufferedReader(_Pipe(_two_sessions().encode())),
        "text pipe": lambda: io.TextIOWrapper(io.BufferedReader(_Pipe(
            _two_sessions().encode())), encoding="utf-8"),
        "path": lambda: file, "str path": lambda: str(file),
        "text file": lambda: file.open(encoding="utf-8")}
    source = sources[kind]()
    progress: list[tuple[int, int]] = []
    with open_store("memory://") as store:
        report = import_sessions(store, source, on_progress=lambda *p: progress.append(p))
        assert store.session("a").read().messages[1].data == b"\x00\x01"
    assert (report.added, report.refused, progress) == (3, [], [(0, 2), (1, 2), (2, 2)])


def test_standard_input_from_a_pipe_is_spooled_and_read_twice(tmp_path: Path) -> None:
    target = f"sqlite:///{tmp_path}/t.db"
    result = subprocess.run([sys.executable, "-m", "chatledger", "import", "--url", target],
                            input=_two_sessions(), capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert _state(target) == {"a": 2, "b": 1}
    assert "temporary file" in " ".join(run("import", "--help").output.split())


def test_the_api_exports_and_reports(tmp_path: Path) -> None:
    with open_store("memory://") as store:
        store.session("x").append([user("1"), user("2")])
        store.session("y").append([user("3")])
        store.session("y").trim(keep_last=0)
        out = io.StringIO()
        progress: list[tuple[int, int]] = []
        report = export_sessions(store, out, on_progress=lambda *p: progress.append(p))
        assert (report.sessions, report.messages) == (2, 2)
        assert progress == [(1, 2), (2, 2)]
        named = io.StringIO()
        assert export_sessions(store, named, ["y", "y"]).sessions == 1
        assert named.getvalue() == '{"session":"y","version":1}\n'
    with open_store(f"sqlite:///{tmp_path}/t.db") as copy:
        first = import_sessions(copy, io.BytesIO(out.getvalue().encode()), dry_run=True)
        assert (first.dry_run, first.added, copy.session("x").info()) == (True, 2, None)
        assert import_sessions(copy, io.BytesIO(out.getvalue().encode())).added == 2


def test_sessions_whose_lines_interleave_are_imported(target: str) -> None:
    text = _text(_record(1, "a"), _record(1, "b"), _record(2, "a"), _record(2, "b"),
                 _record(3, "a")).replace("\n", "\n\n", 1)  # a blank line counts, is skipped
    result = run("import", "--url", target, "--json", stdin=text)
    assert result.exit_code == 0, result.output
    assert [(s["session"], s["added"]) for s in json.loads(result.stdout)["sessions"]] == [
        ("b", 2), ("a", 3)]  # each reported as its last line is read
    assert _state(target) == {"a": 3, "b": 2}


def _held(store: Store, ids: list[str]) -> None:
    store.session("s").append([user("x", id=i, created_at=datetime.fromisoformat(WHEN))
                               for i in ids])


@pytest.mark.parametrize(("held", "verdict"), [
    (["i1", "i2", "i3", "i4", "i5"], "added 1, already there 5"),  # compared 2 at a time
    (["i1", "i2", "i3", "other", "i5"], "REFUSED: the target holds another message at seq 4"),
    (["other"], "REFUSED: the target holds another message at seq 1"),  # seen at line 2
])
def test_held_messages_are_compared_a_batch_at_a_time_before_any_write(
        target: str, monkeypatch: pytest.MonkeyPatch, held: list[str], verdict: str) -> None:
    monkeypatch.setattr(importing, "BATCH", 2)
    with open_store(target) as store:
        _held(store, held)
    result = run("import", "--url", target, stdin=_text(*(_record(n) for n in range(1, 7))))
    assert verdict in result.stdout
    assert result.exit_code == (1 if "REFUSED" in verdict else 0)
    assert _state(target) == {"s": 6 if "added" in verdict else len(held)}


class _Changing(io.BytesIO):
    """A file that holds other lines when it is read the second time."""

    def __init__(self, first: str, second: str) -> None:
        super().__init__(first.encode())
        self.second = second.encode()

    def seek(self, offset: int, whence: int = 0) -> int:
        if self.second:
            second, self.second = self.second, b""
            super().seek(0)
            self.truncate()
            self.write(second)
        return super().seek(offset, whence)


@pytest.mark.parametrize(("second", "line", "imported"), [
    (_text(_record(1, "a"), _record(1, "c")), 2, {"a": 1}),  # a session the check never saw
    (_text(_record(1, "a")), 2, {"a": 1}),  # b's line is gone: b never ends
])
def test_a_file_that_changes_between_the_passes_is_an_error(
        second: str, line: int, imported: dict[str, int]) -> None:
    with open_store("memory://") as store:
        with pytest.raises(BadRecord, match="the file changed after it was checked") as raised:
            import_sessions(store, _Changing(_text(_record(1, "a"), _record(1, "b")), second))
        assert raised.value.line == line
        assert {sid: store.session(sid).info().version  # type: ignore[union-attr]
                for sid in store.sessions()} == imported


def test_a_writer_racing_the_recreation_of_an_emptied_session_stops_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def raced(session: Session, version: int, until: int) -> int:
        raise ConflictError(session.id, version, version + 1)

    monkeypatch.setattr(importing, "_fill_gap", raced)
    with open_store("memory://") as store:
        report = import_sessions(store, io.BytesIO(b'{"session":"e","version":3}'))
    assert report.refused[0].refused == ("stopped: session 'e' is at version 1, not the "
                                         "expected 0")


def test_the_report_lists_refused_sessions() -> None:
    report = ImportReport(False, [importing.SessionImport("a", added=2),
                                  importing.SessionImport("b", refused="why")])
    assert (report.added, [o.session for o in report.refused]) == (2, ["b"])


# Memory: the import of a file 2.5 times as big must not take more memory. Plain
# messages, as most are; the file's sessions of 200 messages each (what one session
# holds is the floor: the files are sized to stay seconds long under tracemalloc).
def _big_file(path: Path, messages: int) -> int:
    with path.open("wb") as out:
        for n in range(messages):
            session, seq = divmod(n, 200)
            out.write(orjson.dumps({
                "session": f"s-{session}", "seq": seq + 1, "role": "user",
                "content": f"message {n}: " + "x" * 150, "id": f"id-{n}",
                "metadata": {"n": n}, "created_at": WHEN}) + b"\n")
    return path.stat().st_size


def _import_peak(path: Path, url: str) -> int:
    """Python's peak allocation while ``path`` is imported (the store already open).

    Coverage's tracer is paused meanwhile: under it, with every allocation traced,
    the import took a worker most of a minute (its lines are covered by the other
    import tests), and its own allocations are none of the import's. Every started
    tracer is paused: an xdist worker runs several (pytest-cov's, and those the
    subprocess patch starts), and stopping the latest resumes the one beneath it."""
    paused: list[coverage.Coverage] = []
    with open_store(url) as store:
        store.session("warm-up").append([user("x")])
        while (tracer := coverage.Coverage.current()) is not None:
            tracer.stop()
            paused.append(tracer)
        tracemalloc.start()
        try:
            report = import_sessions(store, path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            for tracer in reversed(paused):
                tracer.start()
    assert report.added > 0 and not report.refused
    return peak


@pytest.mark.slow
def test_an_import_takes_memory_that_does_not_grow_with_the_file(tmp_path: Path) -> None:
    small = _big_file(tmp_path / "small.jsonl", 5_000)  # about 1.5 MB
    large = _big_file(tmp_path / "large.jsonl", 12_500)
    small_peak = _import_peak(tmp_path / "small.jsonl", f"sqlite:///{tmp_path}/small.db")
    large_peak = _import_peak(tmp_path / "large.jsonl", f"sqlite:///{tmp_path}/large.db")
    print(f"peaks: {small_peak:,} B for {small:,} B, {large_peak:,} B for {large:,} B")
    assert small_peak < small / 3 and large_peak < large / 6
    assert large_peak < small_peak * 1.2  # 2.5 times the file, about the same memory
