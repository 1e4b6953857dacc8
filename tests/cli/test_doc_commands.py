"""The command line page's snippets (docs/cli.md) run as written, in order, in an empty dir."""

from __future__ import annotations

import base64
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from chatledger import Keyring
from chatledger._cli import main

PAGE = Path(__file__).parents[2] / "docs" / "cli.md"
SECTION = PAGE.read_text(encoding="utf-8").split("\n## ", 1)[0]
COMMANDS = [shlex.split(line.split("  #", 1)[0])[1:]
            for line in re.findall(r"```bash\n(.*?)```", SECTION, re.S)[0].splitlines()
            if line.startswith("chatledger ")]
KEYRING = f"k1={base64.b64encode(Keyring.new_key()).decode()}"


def test_every_command_has_its_example() -> None:
    shown = {args[0] for args in COMMANDS}
    visible = {name for name, command in main.commands.items() if not command.hidden}
    assert shown == visible


def test_the_snippets_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CHATLEDGER_URL", raising=False)
    monkeypatch.delenv("CHATLEDGER_NAMESPACE", raising=False)
    for args in COMMANDS:
        if args[0] in ("migrate", "migrate-schema", "create-table"):
            continue  # needs the Redis that RedisChatMessageHistory wrote to, a PostgreSQL, AWS
        if args[0] == "serve":
            continue  # serves until stopped: tests/cli/test_serve.py runs it in a process
        # rotate-key needs a keyring, which only the environment gives
        env = {"CHATLEDGER_KEYRING": KEYRING} if args[0] == "rotate-key" else None
        result = CliRunner().invoke(main, args, env=env)
        assert result.exit_code == 0, (args, result.output)
    assert (tmp_path / "ada.jsonl").read_text().count("\n") == 6
    assert (tmp_path / "copy.db").exists()
