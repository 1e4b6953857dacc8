"""What every command shares: help with an example, exit codes, closed pipes, completion."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from chatledger import open_store, user
from chatledger._cli import main

VISIBLE = sorted(name for name, command in main.commands.items() if not command.hidden)


def test_the_commands_of_the_issue_are_all_there() -> None:
    assert set(VISIBLE) >= {"demo", "show", "sessions", "export", "import", "delete", "purge",
                            "doctor", "bench", "migrate", "completion"}


@pytest.mark.parametrize("name", VISIBLE)
def test_every_command_has_help_with_an_example_and_the_target_options(name: str) -> None:
    result = CliRunner().invoke(main, [name, "--help"])
    assert result.exit_code == 0
    assert "Example" in result.output
    if name != "completion":
        assert "--url" in result.output and "--namespace" in result.output
        assert "--deadline" in result.output


def test_the_groups_help_documents_the_exit_codes() -> None:
    out = CliRunner().invoke(main, ["--help"]).output
    assert "0 done; 1 something is wrong" in out and "2 the command" in out


def test_data_commands_take_json() -> None:
    for name in ("show", "sessions", "import", "doctor", "bench"):
        params = {p.name for p in main.commands[name].params if isinstance(p, click.Option)}
        assert "as_json" in params, name


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell: str) -> None:
    result = CliRunner().invoke(main, ["completion", shell])
    assert result.exit_code == 0 and "_CHATLEDGER_COMPLETE" in result.output


@pytest.mark.parametrize(("command", "first_line"), [
    (["export"], b'{"session":"s","seq":1'),
    (["show", "s"], b"session s"),  # printed through rich, which exits 1 on its own
    (["sessions", "--limit", "300"], b"SESSION"),
])
def test_a_reader_that_closes_the_pipe_early_ends_the_command_quietly(
        tmp_path: Path, command: list[str], first_line: bytes) -> None:
    url = f"sqlite:///{tmp_path}/pipe.db"
    with open_store(url) as store:
        store.session("s").append([user("x" * 1000) for _ in range(1000)])
        for n in range(300):
            store.session(f"s{n:03d}").append([user("x")])
    run = subprocess.Popen([sys.executable, "-m", "chatledger", *command, "--url", url],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert run.stdout is not None and run.stderr is not None
    first = run.stdout.readline()  # as `| head -1` does, then closes its end
    run.stdout.close()
    error = run.stderr.read().decode()
    assert run.wait(timeout=60) == 0, error
    assert first.upper().startswith(first_line.upper()), first
    assert "Error" not in error and "Traceback" not in error
