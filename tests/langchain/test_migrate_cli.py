"""``chatledger migrate --from-langchain``: the command an operator runs, against real servers."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
import redis
from click.testing import CliRunner
from langchain_core.messages import AIMessage, HumanMessage

from chatledger import open_store
from chatledger._cli import main
from chatledger._cli import migrate as cli_migrate
from tests.langchain.test_migrate import write


def test_migrate_imports_once_and_reports(redis_url: str, tmp_path: Path) -> None:
    prefix = f"message_store:{uuid.uuid4().hex[:8]}:"
    write(redis_url, prefix, "alice", [HumanMessage("hi"), AIMessage("hello")])
    write(redis_url, prefix, "bob", [HumanMessage("order 7?")])
    client = redis.Redis.from_url(redis_url)
    client.lpush(f"{prefix}bob", b"{not json")  # an entry nobody can read
    client.close()
    target = f"sqlite:///{tmp_path}/bot.db"
    runner = CliRunner()
    args = ["migrate", "--from-langchain", redis_url, "--key-prefix", prefix, "--to", target]

    dry = runner.invoke(main, [*args, "--dry-run"])
    assert dry.exit_code == 1, dry.output  # an entry could not be imported
    assert "would import 3 messages into 2 sessions" in dry.output
    assert f"{prefix}bob [0]" in dry.output
    assert not (tmp_path / "bot.db").exists() or not list(open_store(target).sessions())

    first = runner.invoke(main, args)
    assert "imported 3 messages into 2 sessions" in first.output
    # Not on a terminal, so no progress bar, not even its label (click's printed "lists").
    assert not {"lists", "migrating lists"} & {line.strip() for line in first.output.splitlines()}
    again = runner.invoke(main, args)
    assert "imported 0 messages" in again.output and "3 messages already in" in again.output
    with open_store(target) as store:
        assert [m.text for m in store.session("alice").read()] == ["hi", "hello"]
        assert [m.text for m in store.session("bob").read()] == ["order 7?"]


def test_migrate_from_a_server_that_is_down_is_one_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["migrate", "--from-langchain",
                                       "redis://u:s3cret@127.0.0.1:1/0",
                                       "--to", f"sqlite:///{tmp_path}/bot.db"])
    assert result.exit_code == 2  # could not run: the source is unreachable
    assert "s3cret" not in result.output
    assert "Error" in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(("source", "extras"), [
    (["--from-langchain", "redis://127.0.0.1:1/0"], "langchain,redis"),
    (["--from-langchain-postgres", "postgresql://127.0.0.1:1/x", "--table", "t"],
     "langchain,postgres"),
    (["--from-langchain-dynamodb", "t"], "langchain,redis,dynamodb"),
])
def test_migrate_without_langchain_core_names_it_and_the_extras(
        source: list[str], extras: str, tmp_path: Path) -> None:
    # A fresh interpreter where `import langchain_core` fails, as without the extra.
    code = f"""
        import sys
        sys.modules["langchain_core"] = None
        from chatledger._cli import main
        main({["migrate", *source, "--to", f"sqlite:///{tmp_path}/bot.db"]!r})
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f'Error: migrate needs langchain_core: pip install -e ".[{extras}]" in a chatledger '
        "checkout")
    assert not (tmp_path / "bot.db").exists()  # refused before it touched the target


def test_an_import_error_without_a_module_name_still_says_what_failed() -> None:
    said = cli_migrate._missing(ImportError("libfoo.so: cannot open shared object file"),
                                cli_migrate._EXTRAS)
    assert str(said) == ("migrate cannot import its extras (libfoo.so: cannot open shared "
                         'object file): pip install -e ".[langchain,redis]" in a '
                         "chatledger checkout")
