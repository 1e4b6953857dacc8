"""Private `redis-server` processes for tests.

`RedisServer` runs its own `redis-server` on a free loopback port, in a temporary
directory it owns, and gives tests the levers a shared server cannot: pause it,
kill it, restart it on the same port with or without its data::

    with RedisServer(appendonly=True) as server:
        server.command("SET", "greeting", "hello")
        server.restart(empty=False)        # the AOF brings the key back
        assert server.command("GET", "greeting") == b"hello"

`command()` speaks a minimal hand-written RESP2 over a raw socket (`_resp`), so this
module needs nothing but the standard library and a `redis-server` binary on PATH.

A server is always reaped (`_server_process`): by `stop()`, by garbage collection, at
interpreter exit, and on Linux (when started from the main thread) by the kernel
if the test process dies without running any cleanup at all.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from ._datadir import DataDir
from ._ports import free_port, launch_on_free_port
from ._process import find_binary, start_server
from ._resp import CommandArg, RedisCommandError, RespReply, call
from ._server_process import ServerProcess

__all__ = ["CommandArg", "RedisCommandError", "RedisServer", "RespReply", "free_port"]

_ServerT = TypeVar("_ServerT", bound="RedisServer")


class RedisServer(ServerProcess):
    """A private `redis-server` on 127.0.0.1, for one test or one test session.

    Args:
        port: the port to listen on; by default a free one is picked (and re-picked
            if another process grabs it first).
        appendonly: run with ``--appendonly yes`` so `restart(empty=False)` keeps data.
        extra_args: more ``redis-server`` arguments, e.g. ``("--appendfsync", "always")``.
        dir: the working directory for data and the log; by default a temporary
            directory that the server owns and removes on `stop()`.
        executable: the binary to run, looked up on PATH.
        startup_timeout: seconds to wait for the server to answer PING.

    The log (``redis.log`` in the directory) holds everything the server printed.
    """

    def __init__(
        self,
        port: int | None = None,
        *,
        appendonly: bool = False,
        extra_args: Sequence[str] = (),
        dir: str | os.PathLike[str] | None = None,
        executable: str = "redis-server",
        startup_timeout: float = 10.0,
    ) -> None:
        super().__init__()
        self.appendonly = appendonly
        self.extra_args = tuple(extra_args)
        self.executable = executable
        self.startup_timeout = startup_timeout
        self._requested_port = port
        self._port = port
        self._dir = DataDir(Path(dir) if dir is not None else None)

    # -- lifecycle -----------------------------------------------------------------------

    def start(self: _ServerT) -> _ServerT:
        """Spawn the server and wait until it answers PING. Returns self."""
        if self.running:
            raise RuntimeError(f"{self!r} is already running")
        binary = find_binary(self.executable)
        if self._requested_port is not None:
            self._launch(binary, self._requested_port)
        else:
            launch_on_free_port(functools.partial(self._launch, binary), self.host)
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM the server, SIGKILL it after `timeout` s; reap it; remove an owned dir."""
        try:
            self._terminate(timeout)
        finally:
            self._dir.remove_owned()

    def kill(self) -> None:
        """SIGKILL the server and wait for it to exit; its directory and data files stay."""
        self._kill()

    def restart(self, empty: bool = True) -> None:
        """Kill the server and start it again on the same port.

        With `empty` the RDB and AOF files are deleted first, so it comes back empty;
        otherwise it reloads whatever it had persisted (with `appendonly`, its AOF).
        """
        if self._port is None:
            raise RuntimeError("restart() needs a server that was started before")
        self.kill()
        if empty:
            self._dir.delete_data_files(self.extra_args)
        self._launch(find_binary(self.executable), self._port)

    def __repr__(self) -> str:
        state = f"pid={self._process.pid}" if self.running and self._process else "stopped"
        return f"RedisServer(port={self._port}, {state})"

    # -- state ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """A redis-py style URL for database 0, e.g. ``redis://127.0.0.1:6390/0``."""
        return f"redis://{self.host}:{self.port}/0"

    @property
    def data_dir(self) -> Path:
        """The server's working directory: data files and ``redis.log``."""
        return self._dir.path

    def log_tail(self, n: int = 20) -> str:
        """The last `n` lines of the server log ("" once an owned directory is removed)."""
        return self._dir.log_tail(n)

    def command(self, *args: CommandArg, timeout: float = 5.0) -> RespReply:
        """Send one command on a fresh connection and return its decoded reply.

        Raises `RedisCommandError` (a RuntimeError) on an error reply and OSError
        (e.g. `TimeoutError`, `ConnectionRefusedError`) when the server can't be reached.
        """
        return call(self.host, self.port, args, timeout)

    def info(self, section: str = "default") -> bytes:
        """The raw text of ``INFO section``, e.g. to poll ``b"role:master"``."""
        reply = self.command("INFO", section)
        return reply if isinstance(reply, bytes) else str(reply).encode()

    # -- internals -----------------------------------------------------------------------

    def _launch(self, binary: str, port: int) -> None:
        self.kill()  # reap a predecessor that died on its own: a failed launch leaves none
        directory = self._dir.create()
        self._port = port
        argv = self._arguments(binary, port, directory)
        self._adopt(start_server(argv, self._dir, self.host, port, self.startup_timeout))

    def _arguments(self, binary: str, port: int, directory: Path) -> list[str]:
        return [
            binary,
            *("--port", str(port)),
            *("--bind", self.host),
            *("--dir", str(directory)),
            *("--save", ""),
            *("--appendonly", "yes" if self.appendonly else "no"),
            *("--daemonize", "no"),
            *self.extra_args,
        ]
