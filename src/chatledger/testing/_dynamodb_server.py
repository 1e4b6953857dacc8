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
import sys
import urllib.request
from collections.abc import Mapping

from .._sync.store import open_store
from ._process import signal_group
from ._server_process import ServerProcess

__all__ = ["DynamoDBEmulator", "DynamoDBServer", "set_fake_credentials"]

_FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                     "AWS_DEFAULT_REGION": "us-east-1"}


def set_fake_credentials() -> None:
    """Fake AWS credentials in ``os.environ`` unless some are set: an emulator takes any."""
    for name, value in _FAKE_CREDENTIALS.items():
        os.environ.setdefault(name, value)


def _untraced(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without what starts coverage in a child Python: the emulator is a
    server, not code under test, and tracing moto's every call costs the suite minutes."""
    return {name: value for name, value in environ.items()
            if name not in ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START")}


class DynamoDBEmulator(ServerProcess):
    """A DynamoDB emulator's process, in a session of its own, and its URLs."""

    region = "us-east-1"

    def __init__(self) -> None:
        super().__init__(reach=signal_group)

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
        self._create_table(url)
        return url

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if the server lingers."""
        self._terminate(grace=10)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(port={self._port})"

    def _create_table(self, url: str) -> None:
        open_store(url + "&create=true").close()


class DynamoDBServer(DynamoDBEmulator):
    """moto's DynamoDB on 127.0.0.1, for one test or one test session."""

    def __init__(self, *, startup_timeout: float = 60.0) -> None:
        super().__init__()
        self.startup_timeout = startup_timeout

    def start(self) -> DynamoDBServer:
        set_fake_credentials()
        line = self._spawn_announcing(
            [sys.executable, "-m", "chatledger.testing._moto_main", self.host, "0"],
            env=_untraced(os.environ))
        if not line.startswith("listening on "):  # "listening on HOST:PORT"
            self.stop()
            raise RuntimeError("moto's DynamoDB server did not start; install it with "
                               "pip install 'moto[dynamodb]' flask flask-cors")
        self._port = int(line.rsplit(":", 1)[1])
        return self

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

