"""dynalite (npm), a second DynamoDB emulator: a second opinion on moto's.

`DynaliteServer` runs dynalite's ``cli.js`` with Node.js on a free loopback port,
its tables in memory, and gives the same URLs as `DynamoDBServer`::

    with DynaliteServer("tests/dynalite/node_modules/.bin/dynalite") as server:
        url = server.table_url("ledger")     # a new table, chatledger's layout
        server.pause()                       # SIGSTOP: requests hang

dynalite 4.0.0 has no ``UpdateTimeToLive`` and no transactions
(``TransactWriteItems`` is an ``UnknownOperationException``): `table_url` makes
the table without turning TTL on (reads filter expired sessions anyway), and
what needs a transaction fails there; docs/backends.md lists what that leaves.
"""

from __future__ import annotations

import shutil
import subprocess

from .._errors import BackendError
from .._sync.store import open_store
from ._dynamodb_server import DynamoDBEmulator, set_fake_credentials
from ._ports import PortTaken, launch_on_free_port

__all__ = ["DynaliteServer"]

_READY = "Dynalite listening at:"
_INSTALL_HINT = "scripts/dynalite installs it (npm ci in tests/dynalite)"


class DynaliteServer(DynamoDBEmulator):
    """dynalite on 127.0.0.1, for one test or one test session.

    Args:
        executable: dynalite's ``cli.js`` (or the ``.bin/dynalite`` link to it), or a
            name looked up on PATH.
    """

    def __init__(self, executable: str = "dynalite") -> None:
        super().__init__()
        self.executable = executable

    def start(self) -> DynaliteServer:
        binary = shutil.which(self.executable)
        if binary is None:
            raise RuntimeError(f"dynalite was not found at {self.executable!r}; "
                               f"{_INSTALL_HINT}")
        set_fake_credentials()
        launch_on_free_port(lambda port: self._launch(binary, port), self.host)
        return self

    def _launch(self, binary: str, port: int) -> None:
        # dynalite reads --port 0 as its default, 4567, so the port is picked here.
        # Tables become ACTIVE at once, not after half a second as by default.
        line = self._spawn_announcing(
            [binary, "--host", self.host, "--port", str(port), "--createTableMs", "0",
             "--deleteTableMs", "0", "--updateTableMs", "0"], stderr=subprocess.STDOUT)
        if line.startswith(_READY):
            self._port = port
            return
        text = line + self._output_after_exit()
        self._kill()
        raise (PortTaken if "EADDRINUSE" in text else RuntimeError)(
            f"dynalite on port {port} did not start ({_INSTALL_HINT}):\n{text}")

    def _output_after_exit(self) -> str:
        """The rest of what a server that failed to start printed before it exited."""
        process = self._process
        if process is None or process.stdout is None:
            return ""
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            return ""
        return process.stdout.read().decode(errors="replace")

    def _create_table(self, url: str) -> None:
        """chatledger's layout, without TTL turned on: dynalite has no ``UpdateTimeToLive``."""
        try:
            open_store(url + "&create=true").close()
        except BackendError as exc:
            if getattr(exc.__cause__, "operation_name", None) != "UpdateTimeToLive":
                raise
