"""Private `redis-server` processes for tests.

`RedisServer` runs its own `redis-server` on a free loopback port, in a temporary
directory it owns, and gives tests the levers a shared server cannot: pause it,
kill it, restart it on the same port with or without its data::

    with RedisServer(appendonly=True) as server:
        server.command("SET", "greeting", "hello")
        server.restart(empty=False)        # the AOF brings the key back
        assert server.command("GET", "greeting") == b"hello"

`command()` speaks a minimal hand-written RESP2 over a raw socket, so this module
needs nothing but the standard library and a `redis-server` binary on PATH.

A server is always reaped: by `stop()`, by garbage collection, at interpreter
exit, and on Linux (when started from the main thread) by the kernel if the test
process dies without running any cleanup at all.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import NoReturn, TypeAlias, TypeVar

__all__ = ["CommandArg", "RedisCommandError", "RedisServer", "RespReply", "free_port"]

RespReply: TypeAlias = "bytes | str | int | list[RespReply] | None"
"""A decoded RESP2 reply: simple string -> str, integer -> int, bulk string -> bytes
(None when null), array -> list (None when null). Error replies raise instead."""

CommandArg: TypeAlias = "str | bytes | int | float"

LOG_FILENAME = "redis.log"
_INSTALL_HINT = "apt-get install -y redis-server"
_PORT_ATTEMPTS = 5
_READY_POLL_INTERVAL = 0.02
# A live server answers in microseconds; a short probe timeout just means another try.
_PROBE_TIMEOUT = 0.25
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>

_ServerT = TypeVar("_ServerT", bound="RedisServer")


class RedisCommandError(RuntimeError):
    """The server answered a command with an error reply (``-ERR ...``)."""


class _PortTaken(RuntimeError):
    """redis-server could not bind its port: another process got there first."""


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on `host` that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        port: int = probe.getsockname()[1]
        return port


# -- RESP2, written by hand ---------------------------------------------------------------


def _encode_command(args: Sequence[CommandArg]) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = _arg_bytes(arg)
        parts += [b"$%d\r\n" % len(data), data, b"\r\n"]
    return b"".join(parts)


def _arg_bytes(arg: CommandArg) -> bytes:
    if isinstance(arg, bytes):
        return arg
    if isinstance(arg, bool) or not isinstance(arg, str | int | float):
        # Like redis-py: a bool has no obvious wire form, so refuse to guess.
        raise TypeError(f"unsupported command argument {arg!r}")
    return str(arg).encode()


def _read_line(stream: io.BufferedIOBase) -> bytes:
    line = stream.readline()
    if not line.endswith(b"\r\n"):
        raise ConnectionError("connection closed in the middle of a reply")
    return line[:-2]


def _read_reply(stream: io.BufferedIOBase) -> RespReply:
    line = _read_line(stream)
    kind, payload = line[:1], line[1:]
    if kind == b"+":
        return payload.decode()
    if kind == b"-":
        raise RedisCommandError(payload.decode())
    if kind == b":":
        return int(payload)
    if kind == b"$":
        return _read_bulk(stream, int(payload))
    if kind == b"*":
        count = int(payload)
        return None if count < 0 else [_read_reply(stream) for _ in range(count)]
    raise ConnectionError(f"not a RESP2 reply: {line!r}")


def _read_bulk(stream: io.BufferedIOBase, length: int) -> bytes | None:
    if length < 0:
        return None
    data = stream.read(length + 2)
    if len(data) != length + 2 or not data.endswith(b"\r\n"):
        raise ConnectionError("connection closed in the middle of a bulk string")
    return data[:-2]


def _call(host: str, port: int, args: Sequence[CommandArg], timeout: float) -> RespReply:
    """Open a connection, send one command, read its reply, close."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(_encode_command(args))
        with sock.makefile("rb") as stream:
            return _read_reply(stream)


# -- process handling -----------------------------------------------------------------------


def _kill_and_reap(process: subprocess.Popen[bytes]) -> None:
    # SIGKILL works on a paused (SIGSTOPped) process too.
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    process.wait()


def _terminate_and_reap(process: subprocess.Popen[bytes], grace: float) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGCONT)  # a paused server cannot act on SIGTERM
            process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(grace)
    _kill_and_reap(process)


def _die_with_parent_hook() -> Callable[[], None] | None:
    """On Linux, make the child get SIGKILL when the thread that spawned it dies.

    That covers a test process killed outright, where no Python cleanup runs. The signal
    follows the spawning *thread*, so it is only used from the main thread, whose end is
    the end of the process.
    """
    if not sys.platform.startswith("linux"):
        return None
    if threading.current_thread() is not threading.main_thread():
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def die_with_parent() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))

    return die_with_parent


def _wait_for_run_state(pid: int, *, stopped: bool, timeout: float = 2.0) -> None:
    """Wait until the kernel reports `pid` as stopped (or running), where /proc exists.

    Signals are delivered asynchronously: without this a request sent right after
    pause() could still be served.
    """
    stat = Path(f"/proc/{pid}/stat")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return  # no /proc here, or the process is gone: nothing to wait for
        if (state in ("T", "t")) == stopped:
            return
        time.sleep(0.002)


def _tail(path: Path, lines: int, offset: int = 0) -> str:
    try:
        with path.open("rb") as log:
            log.seek(offset)
            text = log.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:]) if lines > 0 else ""


class RedisServer:
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

    host = "127.0.0.1"

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
        self.appendonly = appendonly
        self.extra_args = tuple(extra_args)
        self.executable = executable
        self.startup_timeout = startup_timeout
        self._requested_port = port
        self._port = port
        self._given_dir = Path(dir) if dir is not None else None
        self._tmpdir: tempfile.TemporaryDirectory[str] | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._reaper: weakref.finalize[[subprocess.Popen[bytes]], RedisServer] | None = None
        self._log_offset = 0

    # -- lifecycle -----------------------------------------------------------------------

    def start(self: _ServerT) -> _ServerT:
        """Spawn the server and wait until it answers PING. Returns self."""
        if self.running:
            raise RuntimeError(f"{self!r} is already running")
        binary = self._find_binary()
        if self._requested_port is not None:
            self._launch(binary, self._requested_port)
            return self
        for _ in range(_PORT_ATTEMPTS):
            with contextlib.suppress(_PortTaken):
                self._launch(binary, free_port(self.host))
                return self
        raise RuntimeError(f"redis-server found no free port in {_PORT_ATTEMPTS} attempts")

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM the server, SIGKILL it after `timeout` s; reap it; remove an owned dir."""
        process, self._process = self._process, None
        try:
            if process is not None:
                _terminate_and_reap(process, timeout)
        finally:
            self._forget_reaper()
            if self._tmpdir is not None:
                self._tmpdir.cleanup()
                self._tmpdir = None

    def kill(self) -> None:
        """SIGKILL the server and wait for it to exit; its directory and data files stay."""
        process, self._process = self._process, None
        if process is not None:
            _kill_and_reap(process)
        self._forget_reaper()

    def restart(self, empty: bool = True) -> None:
        """Kill the server and start it again on the same port.

        With `empty` the RDB and AOF files are deleted first, so it comes back empty;
        otherwise it reloads whatever it had persisted (with `appendonly`, its AOF).
        """
        if self._port is None:
            raise RuntimeError("restart() needs a server that was started before")
        self.kill()
        if empty:
            self._delete_data_files()
        self._launch(self._find_binary(), self._port)

    def pause(self) -> None:
        """Freeze the server with SIGSTOP: connections stay open, nothing is answered."""
        self._signal(signal.SIGSTOP)
        _wait_for_run_state(self.pid, stopped=True)

    def resume(self) -> None:
        """Undo `pause()` with SIGCONT."""
        self._signal(signal.SIGCONT)
        _wait_for_run_state(self.pid, stopped=False)

    def __enter__(self: _ServerT) -> _ServerT:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid={self._process.pid}" if self.running and self._process else "stopped"
        return f"RedisServer(port={self._port}, {state})"

    # -- state ---------------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True while the server process exists (paused counts as running)."""
        return self._process is not None and self._process.poll() is None

    @property
    def port(self) -> int:
        """The port the server listens on."""
        if self._port is None:
            raise RuntimeError("the port is picked by start()")
        return self._port

    @property
    def url(self) -> str:
        """A redis-py style URL for database 0, e.g. ``redis://127.0.0.1:6390/0``."""
        return f"redis://{self.host}:{self.port}/0"

    @property
    def pid(self) -> int:
        """The server's process id."""
        if self._process is None:
            raise RuntimeError(f"{self!r} is not running")
        return self._process.pid

    @property
    def data_dir(self) -> Path:
        """The server's working directory: data files and ``redis.log``."""
        if self._given_dir is not None:
            return self._given_dir
        if self._tmpdir is None:
            self._tmpdir = tempfile.TemporaryDirectory(prefix="chatledger-redis-")
        return Path(self._tmpdir.name)

    def log_tail(self, n: int = 20) -> str:
        """The last `n` lines of the server log ("" once an owned directory is removed)."""
        return _tail(self.data_dir / LOG_FILENAME, n) if self._has_dir() else ""

    def command(self, *args: CommandArg, timeout: float = 5.0) -> RespReply:
        """Send one command on a fresh connection and return its decoded reply.

        Raises `RedisCommandError` (a RuntimeError) on an error reply and OSError
        (e.g. `TimeoutError`, `ConnectionRefusedError`) when the server can't be reached.
        """
        return _call(self.host, self.port, args, timeout)

    def info(self, section: str = "default") -> bytes:
        """The raw text of ``INFO section``, e.g. to poll ``b"role:master"``."""
        reply = self.command("INFO", section)
        return reply if isinstance(reply, bytes) else str(reply).encode()

    # -- internals -----------------------------------------------------------------------

    def _find_binary(self) -> str:
        binary = shutil.which(self.executable)
        if binary is None:
            raise RuntimeError(
                f"{self.executable!r} was not found on PATH; install it with "
                f"`{_INSTALL_HINT}` (Debian/Ubuntu) or your platform's package manager"
            )
        return binary

    def _has_dir(self) -> bool:
        return self._given_dir is not None or self._tmpdir is not None

    def _launch(self, binary: str, port: int) -> None:
        directory = self.data_dir
        directory.mkdir(parents=True, exist_ok=True)
        log_path = directory / LOG_FILENAME
        with log_path.open("ab") as log:
            # Only what this launch writes explains a failure to start.
            self._log_offset = log.tell()
            process = subprocess.Popen(
                self._arguments(binary, port, directory),
                cwd=directory,
                stdin=subprocess.DEVNULL,
                stdout=log,  # with no --logfile the server logs to stdout
                stderr=subprocess.STDOUT,
                # Safe despite threads: the hook only makes one prctl() call.
                preexec_fn=_die_with_parent_hook(),  # noqa: PLW1509
            )
        self._process = process
        self._port = port
        self._reaper = weakref.finalize(self, _kill_and_reap, process)
        self._wait_until_ready(process, port)

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

    def _wait_until_ready(self, process: subprocess.Popen[bytes], port: int) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                self._fail_start(port, f"it exited with status {process.returncode}")
            if self._answers_ping(port, process.pid):
                return
            time.sleep(_READY_POLL_INTERVAL)
        self._fail_start(port, f"it did not answer PING within {self.startup_timeout:g} s")

    def _answers_ping(self, port: int, pid: int) -> bool:
        try:
            if _call(self.host, port, ["PING"], _PROBE_TIMEOUT) != "PONG":
                return False
            # Whoever grabbed the port first may be another redis-server: make sure it is ours.
            info = _call(self.host, port, ["INFO", "server"], _PROBE_TIMEOUT)
        except (OSError, RedisCommandError):  # not listening yet, or still loading data
            return False
        return isinstance(info, bytes) and f"process_id:{pid}\r\n".encode() in info

    def _fail_start(self, port: int, reason: str) -> NoReturn:
        self.kill()
        log = _tail(self.data_dir / LOG_FILENAME, 30, self._log_offset)
        message = f"redis-server on port {port} failed to start: {reason}\n--- log ---\n{log}"
        if "Address already in use" in log:
            raise _PortTaken(message)
        raise RuntimeError(message)

    def _signal(self, signum: signal.Signals) -> None:
        if not self.running:
            raise RuntimeError(f"{self!r} is not running")
        os.kill(self.pid, signum)

    def _forget_reaper(self) -> None:
        if self._reaper is not None:
            self._reaper.detach()
            self._reaper = None

    def _option(self, name: str, default: str) -> str:
        """The value of ``--name`` in extra_args (the last one wins, as in redis), else default."""
        value = default
        for flag, argument in zip(self.extra_args, self.extra_args[1:], strict=False):
            if flag == f"--{name}":
                value = argument
        return value

    def _delete_data_files(self) -> None:
        directory = self.data_dir
        (directory / self._option("dbfilename", "dump.rdb")).unlink(missing_ok=True)
        # Redis < 7 keeps one AOF file; Redis >= 7 keeps a directory of them.
        (directory / self._option("appendfilename", "appendonly.aof")).unlink(missing_ok=True)
        aof_dir = directory / self._option("appenddirname", "appendonlydir")
        shutil.rmtree(aof_dir, ignore_errors=True)
