"""``chatledger migrate --from-langgraph``: the command an operator runs, on real sources."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.types import Command

from chatledger._cli import main
from chatledger.langgraph import LedgerSaver
from tests.cli import _langgraph_sources
from tests.langgraph._copy_sources import (
    config,
    postgres_database_url,
    source_saver,
    write_threads,
)
from tests.langgraph._graphs import agent_graph, approval_graph, texts


def _run(*args: str) -> Any:
    return CliRunner().invoke(main, ["migrate", *args])


def test_from_a_sqlite_saver_dry_run_copy_verify_and_again(tmp_path: Path) -> None:
    with SqliteSaver.from_conn_string(str(tmp_path / "lg.db")) as saver:
        write_threads(saver, long_turns=3)
    source, target = f"sqlite:///{tmp_path}/lg.db", f"sqlite:///{tmp_path}/ledger.db"

    dry = _run("--from-langgraph", source, "--to", target, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "5 threads found" in dry.output and "would copy " in dry.output
    assert "verified" not in dry.output
    with LedgerSaver.from_url(target) as ledger:
        assert list(ledger.list(None)) == []

    first = _run("--from-langgraph", source, "--to", target)
    assert first.exit_code == 0, first.output
    assert "verified: 5 threads the same on both sides" in first.output
    # Not on a terminal: no progress bar, not even its label.
    assert "copying threads" not in first.output
    again = _run("--from-langgraph", source, "--to", target)
    assert "copied 0 checkpoints and 0 pending writes" in again.output
    with LedgerSaver.from_url(target) as ledger:
        done = approval_graph(ledger).invoke(Command(resume="yes"), config("approval"))
        assert texts(done)[-1] == "Refund sent."


def test_from_a_postgres_saver_by_its_url(request: pytest.FixtureRequest,
                                          tmp_path: Path) -> None:
    with source_saver("postgres", request, tmp_path) as saver:
        write_threads(saver, long_turns=2)
        source = postgres_database_url(saver)
    result = _run("--from-langgraph", source, "--to", f"sqlite:///{tmp_path}/ledger.db")
    assert result.exit_code == 0, result.output
    assert "5 threads found" in result.output and "verified: 5 threads" in result.output


def test_from_a_factory_with_thread_ids_for_a_saver_that_cannot_list(
        request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with source_saver("dynamodb", request, tmp_path) as saver:
        write_threads(saver, long_turns=1)
    monkeypatch.setenv("LG_TABLE", saver.table_name)
    monkeypatch.setenv("LG_ENDPOINT", request.getfixturevalue("dynamodb_server").endpoint_url)
    factory = f"{_langgraph_sources.__name__}:dynamodb"
    target = f"sqlite:///{tmp_path}/ledger.db"
    unnamed = _run("--from-langgraph", factory, "--to", target)
    assert unnamed.exit_code == 2
    assert "DynamoDBSaver could not list its threads" in unnamed.output
    assert "name them with --thread-id" in unnamed.output
    assert "thread_ids" not in unnamed.output  # the Python argument, not the option
    named = _run("--from-langgraph", factory, "--to", target,
                 *[arg for thread in ("approval", "review") for arg in ("--thread-id", thread)])
    assert named.exit_code == 0, named.output
    assert "2 threads found" in named.output and "verified: 2 threads" in named.output
    typo = _run("--from-langgraph", factory, "--to", target,
                *[arg for thread in ("approval", "reveiw") for arg in ("--thread-id", thread)])
    assert typo.exit_code == 1  # counted as the one thread found, the other not copied
    assert "1 thread found" in typo.output and "verified: 1 thread the same" in typo.output
    assert "reveiw: the source holds no checkpoint of it" in typo.output


def test_a_thread_the_target_holds_otherwise_exits_1_and_is_listed(tmp_path: Path) -> None:
    _langgraph_sources.WRITTEN = type(_langgraph_sources.WRITTEN)()
    agent_graph(_langgraph_sources.WRITTEN).invoke({"messages": [HumanMessage("hi")]},
                                                   config("agent"))
    target = f"sqlite:///{tmp_path}/ledger.db"
    with LedgerSaver.from_url(target) as ledger:
        agent_graph(ledger).invoke({"messages": [HumanMessage("other")]}, config("agent"))
    result = _run("--from-langgraph", f"{_langgraph_sources.__name__}:written", "--to", target)
    assert result.exit_code == 1
    assert "1 thread not copied:" in result.output
    assert "differences between the source and chatledger:" in result.output
    assert "thread 'agent' checkpoint" in result.output


@pytest.mark.parametrize(("source", "message"), [
    ("redis://127.0.0.1:1/0", "--from-langgraph takes postgresql://..., sqlite:///PATH or "
                              "module:factory"),
    ("sqlite:///{tmp}/missing.db", "no SQLite database at"),
    ("tests.cli._langgraph_sources:nothing", "cannot find tests.cli._langgraph_sources:nothing"),
    ("tests.cli._langgraph_sources:broken", "cannot read tests.cli._langgraph_sources:broken: "
                                            "ConnectionError: the saver's server is down"),
    ("postgresql://u:s3cret@127.0.0.1:1/x", "cannot read postgresql://u:***@127.0.0.1:1/x"),
])
def test_a_source_that_cannot_be_read_exits_2_and_says_why(source: str, message: str,
                                                           tmp_path: Path) -> None:
    result = _run("--from-langgraph", source.format(tmp=tmp_path),
                  "--to", f"sqlite:///{tmp_path}/ledger.db")
    assert result.exit_code == 2, result.output
    assert message in result.output and "s3cret" not in result.output
    assert "Traceback" not in result.output


def test_one_source_at_a_time(tmp_path: Path) -> None:
    result = _run("--from-langgraph", "sqlite:///x.db", "--from-langchain", "redis://h/0")
    assert result.exit_code == 2 and "--from-langgraph SOURCE" in result.output



def test_without_langgraph_it_names_the_extra(tmp_path: Path) -> None:
    # A fresh interpreter where `import langgraph` fails, as without the extra.
    code = f"""
        import sys
        sys.modules["langgraph"] = None
        from chatledger._cli import main
        main(["migrate", "--from-langgraph", "sqlite:///x.db", "--to",
              "sqlite:///{tmp_path}/bot.db"])
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("Error: migrate needs langgraph")
    assert done.stderr.strip().endswith('pip install -e ".[langgraph]" in a chatledger checkout')
    assert not (tmp_path / "bot.db").exists()  # refused before it touched the target
