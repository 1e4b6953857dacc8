"""``chatledger serve``: refuses an open binding without a token, then serves for real."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

from click.testing import CliRunner

from chatledger import open_store, user
from chatledger._cli import main


def test_serving_beyond_loopback_without_a_token_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/bot.db"
    result = CliRunner().invoke(main, ["serve", url, "--host", "0.0.0.0"],
                                env={"CHATLEDGER_INSPECTOR_TOKEN": ""})
    assert result.exit_code == 2
    assert "binding to 0.0.0.0 exposes the store's conversations" in result.output
    assert not (tmp_path / "bot.db").exists()


def test_serving_a_missing_database_is_refused(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["serve", f"sqlite:///{tmp_path}/typo.db"])
    assert result.exit_code == 2 and "no SQLite database at" in result.output


def test_serve_answers_with_the_token_and_stops_on_sigterm(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/bot.db"
    with open_store(url, namespace="bot") as store:
        store.session("user-42").append([user("Where is order 123?")])
    process = subprocess.Popen(
        [sys.executable, "-m", "chatledger", "serve", url, "--namespace", "bot", "--port", "0"],
        env={**os.environ, "CHATLEDGER_INSPECTOR_TOKEN": "tok"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stderr is not None
    try:
        # The line comes once the socket listens: connections wait from then on.
        banner = process.stderr.readline()
        found = re.search(r"on http://127\.0\.0\.1:(\d+)/ \(read-only, token required\)",
                          banner)
        assert found is not None, banner
        port = int(found[1])
        assert f"chatledger inspector of {url} on" in banner
        base = f"http://127.0.0.1:{port}"
        try:
            urllib.request.urlopen(f"{base}/sessions")
            raise AssertionError("served without the token")
        except urllib.error.HTTPError as refused:
            assert refused.code == 401
        request = urllib.request.Request(f"{base}/session?id=user-42",
                                         headers={"Authorization": "Bearer tok"})
        with urllib.request.urlopen(request) as response:
            assert "Where is order 123?" in response.read().decode()
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    # uvicorn shuts down gracefully, then re-raises the signal it caught.
    assert process.returncode == -signal.SIGTERM, stderr


def test_a_port_in_use_is_refused_in_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/bot.db"
    with open_store(url) as store:
        store.session("s").append([user("hi")])
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(main, ["serve", url, "--port", str(port)])
    assert result.exit_code == 2
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in result.output


def test_a_host_that_does_not_resolve_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/bot.db"
    with open_store(url) as store:
        store.session("s").append([user("hi")])
    result = CliRunner().invoke(main, ["serve", url, "--host", "no-such-host.invalid",
                                       "--token", "t"])
    assert result.exit_code == 2 and "cannot listen on no-such-host.invalid:8484" in result.output
