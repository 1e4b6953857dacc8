"""``chatledger serve``: refuses an open binding without a token, then serves for real."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from click.testing import CliRunner

from chatledger import open_store, user
from chatledger._cli import main
from chatledger.testing._ports import free_port


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


def _wait_until_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    """A readiness wait (not a timed assertion): the server's startup is not timed."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("chatledger serve never listened")


def test_serve_answers_with_the_token_and_stops_on_sigterm(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/bot.db"
    with open_store(url, namespace="bot") as store:
        store.session("user-42").append([user("Where is order 123?")])
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "chatledger", "serve", url, "--namespace", "bot",
         "--port", str(port)],
        env={**os.environ, "CHATLEDGER_INSPECTOR_TOKEN": "tok"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_until_listening(port, process)
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
    assert process.returncode == -signal.SIGTERM
    assert (f"chatledger inspector of {url} on http://127.0.0.1:{port}/ "
            "(read-only, token required)") in stderr.decode()
