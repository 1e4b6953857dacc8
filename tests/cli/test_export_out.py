"""Where an export goes: into a redirection as it stands, never over the store it
reads, and never a temporary file left behind by a stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from chatledger import open_store, user
from chatledger._cli import main
from chatledger._cli.transfer import _whole


def _store(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/bot.db"
    with open_store(url) as store:
        store.session("ada").append([user("one"), user("two")])
    return url


def _export(url: str, out: str, stdout: int | object) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "chatledger", "export", "--url", url, "--out", out],
        stdout=stdout, stderr=subprocess.PIPE, timeout=60, check=False)


def test_out_dev_stdout_into_a_pipe_writes_the_lines(tmp_path: Path) -> None:
    result = _export(_store(tmp_path), "/dev/stdout", subprocess.PIPE)
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == 2 and b'"one"' in result.stdout


def test_out_dev_stdout_appended_to_a_file_keeps_what_it_held(tmp_path: Path) -> None:
    """``--out /dev/stdout >> log`` appends: reopening the path would truncate the file,
    and replacing it would lose what it held."""
    url = _store(tmp_path)
    log = tmp_path / "log.jsonl"
    log.write_text('{"earlier": true}\n')
    with log.open("a") as appended:
        result = _export(url, "/dev/stdout", appended)
    assert result.returncode == 0, result.stderr
    lines = log.read_text().splitlines()
    assert lines[0] == '{"earlier": true}' and len(lines) == 3


def test_out_naming_another_descriptor_writes_into_it(tmp_path: Path) -> None:
    url = _store(tmp_path)
    target = tmp_path / "fd.jsonl"
    with target.open("w") as opened:
        result = subprocess.run(
            [sys.executable, "-m", "chatledger", "export", "--url", url, "--out",
             f"/dev/fd/{opened.fileno()}"], pass_fds=[opened.fileno()],
            capture_output=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert len(target.read_text().splitlines()) == 2


def test_out_naming_the_store_is_refused_and_the_store_kept(tmp_path: Path) -> None:
    url = _store(tmp_path)
    database = tmp_path / "bot.db"
    for out in (str(database), f"{tmp_path}/./bot.db", f"{database}-wal"):
        result = CliRunner().invoke(main, ["export", "--url", url, "--out", out])
        assert result.exit_code == 2, result.output
        assert "is the store being exported" in result.output
    with open_store(url) as store:
        assert [m.text for m in store.session("ada").read().messages] == ["one", "two"]


def test_sigterm_during_an_export_removes_its_temporary_file(tmp_path: Path) -> None:
    """A service manager's stop, or ``timeout``, ends the export as Ctrl-C does."""
    out = tmp_path / "all.jsonl"
    out.write_text("the earlier export\n")
    handler = signal.getsignal(signal.SIGTERM)  # coverage's, under coverage

    def export_stopped() -> None:
        with _whole(str(out), set()) as lines:
            lines.write("a line\n")
            os.kill(os.getpid(), signal.SIGTERM)

    with pytest.raises(SystemExit) as stopped:
        export_stopped()
    assert stopped.value.code == 128 + signal.SIGTERM
    assert out.read_text() == "the earlier export\n"
    assert [p.name for p in tmp_path.iterdir()] == ["all.jsonl"]
    assert signal.getsignal(signal.SIGTERM) is handler  # put back


def test_out_naming_a_descriptor_not_open_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["export", "--url", _store(tmp_path),
                                       "--out", "/dev/fd/987"])
    assert result.exit_code == 2 and "Could not open file '/dev/fd/987'" in result.output


def test_an_export_off_the_main_thread_keeps_the_default_sigterm(tmp_path: Path) -> None:
    """Only the main thread may set a handler: an export elsewhere leaves it alone."""
    import threading

    handler, seen = signal.getsignal(signal.SIGTERM), []

    def export() -> None:
        with _whole(str(tmp_path / "t.jsonl"), set()) as lines:
            lines.write("x\n")
            seen.append(signal.getsignal(signal.SIGTERM))

    worker = threading.Thread(target=export)
    worker.start()
    worker.join(timeout=30)
    assert seen == [handler] and (tmp_path / "t.jsonl").read_text() == "x\n"
