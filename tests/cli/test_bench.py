"""bench: the turn-cost benchmark against a URL, with a plot and a peer on Redis."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from chatledger import open_store
from chatledger._cli import main

QUICK = ["--lengths", "0,10,50", "--turns", "3", "--warmup", "1"]


def test_bench_on_sqlite_measures_every_length_and_cleans_up(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/bench.db"
    result = CliRunner().invoke(main, ["bench", *QUICK, "--json", "--url", url])
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert [(r["contender"], r["length"]) for r in figures["rows"]] == [
        ("chatledger", 0), ("chatledger", 10), ("chatledger", 50)]
    assert all(r["median_us"] > 0 and r["p90_us"] >= r["median_us"] for r in figures["rows"])
    with open_store(url) as store:
        assert list(store.sessions()) == []  # its sessions are gone
    table = CliRunner().invoke(main, ["bench", *QUICK, "--url", url]).stdout
    assert "chatledger: median at 50 / at 0 = " in table


def test_bench_plots_a_png(tmp_path: Path) -> None:
    png = tmp_path / "turns.png"
    url = f"sqlite:///{tmp_path}/bench.db"
    result = CliRunner().invoke(main, ["bench", *QUICK, "--plot", str(png), "--url", url])
    assert result.exit_code == 0, result.output
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_plot_without_matplotlib_fails_before_measuring(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    monkeypatch.delitem(sys.modules, "chatledger._cli.plot", raising=False)
    monkeypatch.delattr("chatledger._cli.plot", raising=False)  # `from . import plot` looks here
    url = f"sqlite:///{tmp_path}/bench.db"
    result = CliRunner().invoke(main, ["bench", "--plot", str(tmp_path / "p.png"), "--url", url])
    assert result.exit_code == 2
    assert ('--plot needs matplotlib: pip install -e ".[plot]" in a chatledger checkout'
            in result.output)
    assert not (tmp_path / "bench.db").exists()


def test_bench_on_redis_runs_redis_chat_message_history_beside(redis_url: str) -> None:
    url = f"{redis_url}?namespace=bench-{uuid.uuid4().hex[:8]}"
    result = CliRunner().invoke(main, ["bench", *QUICK, "--json", "--url", url])
    assert result.exit_code == 0, result.output
    contenders = {r["contender"] for r in json.loads(result.stdout)["rows"]}
    assert contenders == {"chatledger", "RedisChatMessageHistory"}
    import redis

    client = redis.Redis.from_url(redis_url)
    assert list(client.scan_iter("chatledger-bench-*")) == []  # the peer's lists are gone too
    client.close()


def test_bench_without_the_peer_installed_says_so(redis_url: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langchain_community.chat_message_histories", None)
    url = f"{redis_url}?namespace=bench-{uuid.uuid4().hex[:8]}"
    result = CliRunner().invoke(main, ["bench", *QUICK, "--json", "--url", url])
    assert result.exit_code == 0, result.output
    assert "RedisChatMessageHistory not installed" in result.stderr
    assert {r["contender"] for r in json.loads(result.stdout)["rows"]} == {"chatledger"}


@pytest.mark.parametrize("lengths", ["", "ten", "-1"])
def test_bad_lengths_are_a_usage_error(lengths: str) -> None:
    result = CliRunner().invoke(main, ["bench", "--lengths", lengths])
    assert result.exit_code == 2 and "--lengths" in result.output
