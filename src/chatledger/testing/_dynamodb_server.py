"""A private DynamoDB emulator for tests: moto in server mode, over real HTTP.

`DynamoDBServer` runs moto's DynamoDB (``pip install "moto[dynamodb]" flask
flask-cors``) in a child process on a free loopback port, made fast enough for
a test suite and serial like DynamoDB (:mod:`._moto_main` says how), and can
arm error replies that no emulator gives by itself::

    with DynamoDBServer() as server:
        url = server.table_url("ledger")           # a new table, chatledger's layout
        store = open_store(url)
        server.fail_next("ThrottlingException", operation="TransactWriteItems")
        server.pause()      # SIGSTOP: connections stay open, nothing is answered
        server.resume()

Credentials: moto takes any; the server sets fake ones in ``os.environ``
(``AWS_ACCESS_KEY_ID``...) unless some are set, so that the AWS chain finds them.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import urllib.request
import weakref
from types import TracebackType

from .._sync.store import open_store
from ._process import die_with_parent_hook, wait_for_run_state

__all__ = ["DynamoDBServer"]

_FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                     "AWS_DEFAULT_REGION": "us-east-1"}


class DynamoDBServer:
    """moto's DynamoDB on 127.0.0.1, for one test or one test session."""

    host = "127.0.0.1"
    region = "us-east-1"

    def __init__(self, *, startup_timeout: float = 60.0) -> None:
        self.startup_timeout = startup_timeout
        self._port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._reaper: weakref.finalize[[subprocess.Popen[bytes]], DynamoDBServer] | None = None

    def start(self) -> DynamoDBServer:
        for name, value in _FAKE_CREDENTIALS.items():
            os.environ.setdefault(name, value)
        self._process = subprocess.Popen(
            [sys.executable, "-m", "chatledger.testing._moto_main", self.host, "0"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
            # killed with the test process even when no cleanup runs (as redis-server)
            preexec_fn=die_with_parent_hook())  # noqa: PLW1509
        self._reaper = weakref.finalize(self, _kill, self._process)
        assert self._process.stdout is not None
        line = self._process.stdout.readline().decode()  # "listening on HOST:PORT"
        if not line.startswith("listening on "):
            self.stop()
            raise RuntimeError("moto's DynamoDB server did not start; install it with "
                               "pip install 'moto[dynamodb]' flask flask-cors")
        self._port = int(line.rsplit(":", 1)[1])
        return self

    def stop(self) -> None:
        if self._process is not None:
            _kill(self._process)
            self._process = None

    def pause(self) -> None:
        """SIGSTOP the server: requests hang."""
        os.kill(self.pid, signal.SIGSTOP)
        wait_for_run_state(self.pid, stopped=True)

    def resume(self) -> None:
        os.kill(self.pid, signal.SIGCONT)
        wait_for_run_state(self.pid, stopped=False)

    def __enter__(self) -> DynamoDBServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"DynamoDBServer(port={self._port})"

    @property
    def pid(self) -> int:
        if self._process is None:
            raise RuntimeError(f"{self!r} is not running")
        return self._process.pid

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the port is picked by start()")
        return self._port

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url(self, table: str, endpoint_url: str | None = None) -> str:
        """The ``dynamodb://`` URL of ``table`` on this server (or through ``endpoint_url``)."""
        return (f"dynamodb://{table}?region={self.region}"
                f"&endpoint_url={endpoint_url or self.endpoint_url}")

    def table_url(self, table: str | None = None) -> str:
        """The URL of a new table with chatledger's layout (a fresh name by default)."""
        url = self.url(table or f"t-{secrets.token_hex(8)}")  # not uuid4: tests patch it
        open_store(url + "&create=true").close()
        return url

    def fail_next(self, code: str, *, count: int = 1, operation: str | None = None,
                  after: bool = False) -> None:
        """Answer the next ``count`` requests (of ``operation``) with DynamoDB's error ``code``.

        ``after``: apply the request first, then answer with the error (a reply lost).
        """
        body = json.dumps({"code": code, "count": count, "operation": operation,
                           "after": after}).encode()
        request = urllib.request.Request(f"{self.endpoint_url}/__faults__", data=body,
                                         method="POST")
        with urllib.request.urlopen(request, timeout=10):
            pass


def _kill(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (coverage writes its data), then SIGKILL if the server lingers."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGCONT)  # a paused server cannot act on SIGTERM
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    if process.stdout is not None:
        process.stdout.close()
