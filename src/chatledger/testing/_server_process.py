"""What every private server of the test kit shares: one process on a loopback port,
its port and pid, pause and resume, and the way it is stopped and reaped.

`RedisServer`, `PostgresServer`, `DynamoDBServer` and `DynaliteServer` each start their
own process their own way and hand it to `_adopt`; from then on this class owns it.
They differ in what a signal must reach (`reach`): redis-server is one process;
the emulators run in a session of their own and are signalled as a process group;
PostgreSQL's helpers start sessions of their own, so each is signalled by pid.

A server is always reaped: by `stop()` or `kill()`, and by a finalizer when the
object is garbage collected or the interpreter exits without stopping it.
"""

from __future__ import annotations

import signal
import subprocess
import weakref
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TypeVar

from ._process import (
    Reach,
    die_with_parent_hook,
    kill_and_reap,
    signal_process,
    terminate_and_reap,
    wait_for_run_state,
)

__all__ = ["ServerProcess"]

_ServerT = TypeVar("_ServerT", bound="ServerProcess")


class ServerProcess:
    """A server process on 127.0.0.1 that a subclass starts (`start`) and stops (`stop`)."""

    host = "127.0.0.1"

    def __init__(self, *, reach: Reach = signal_process) -> None:
        self._reach = reach
        self._port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._reaper: weakref.finalize[..., ServerProcess] | None = None

    def start(self: _ServerT) -> _ServerT:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def __enter__(self: _ServerT) -> _ServerT:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.stop()

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
    def pid(self) -> int:
        """The server's process id."""
        if self._process is None:
            raise RuntimeError(f"{self!r} is not running")
        return self._process.pid

    # -- signals -------------------------------------------------------------------------

    def pause(self) -> None:
        """Freeze the server with SIGSTOP: connections stay open, nothing is answered."""
        self._signal(signal.SIGSTOP)
        wait_for_run_state(self.pid, stopped=True)

    def resume(self) -> None:
        """Undo `pause()` with SIGCONT."""
        self._signal(signal.SIGCONT)
        wait_for_run_state(self.pid, stopped=False)

    def _signal(self, signum: signal.Signals) -> None:
        if not self.running:
            raise RuntimeError(f"{self!r} is not running")
        self._reach(self.pid, signum)

    # -- the process's life, for subclasses ------------------------------------------------

    def _spawn_announcing(self, argv: Sequence[str], *, stderr: int = subprocess.DEVNULL,
                          env: Mapping[str, str] | None = None) -> str:
        """Start `argv` in a session of its own and return the first line it prints,
        which says where it listens ("" if it exited first)."""
        process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr, env=env,
            start_new_session=True,
            # killed with the test process even when no cleanup runs
            preexec_fn=die_with_parent_hook())  # noqa: PLW1509
        self._adopt(process)
        assert process.stdout is not None
        return process.stdout.readline().decode(errors="replace")

    def _adopt(self, process: subprocess.Popen[bytes]) -> None:
        """Own `process`: it is reaped even if this object is only garbage collected."""
        self._process = process
        self._reaper = weakref.finalize(self, kill_and_reap, process, self._reach)

    def _terminate(self, grace: float, stop_signal: signal.Signals = signal.SIGTERM) -> None:
        """Ask the server to stop, SIGKILL it after `grace` s; reap it."""
        process, self._process = self._process, None
        try:
            if process is not None:
                terminate_and_reap(process, grace, self._reach, stop_signal)
        finally:
            self._forget(process)

    def _kill(self) -> None:
        """SIGKILL the server (every process `reach` reaches) and reap it."""
        process, self._process = self._process, None
        try:
            if process is not None:
                kill_and_reap(process, self._reach)
        finally:
            self._forget(process)

    def _forget(self, process: subprocess.Popen[bytes] | None) -> None:
        if self._reaper is not None:
            self._reaper.detach()
            self._reaper = None
        if process is not None and process.stdout is not None:
            process.stdout.close()
