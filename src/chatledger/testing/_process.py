"""Process control for the private servers: find the binary, start it and wait until
it answers, wait for a signal to take effect, reap it.

A spawned server must never outlive the tests that started it, whatever way they
end, so every path out of a server's life ends in a reaped process.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

from ._datadir import DataDir
from ._ports import PortTaken
from ._resp import is_server

_INSTALL_HINT = "apt-get install -y redis-server"
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
_READY_POLL_INTERVAL = 0.02
# A live server answers in microseconds; a short probe timeout just means another try.
_PROBE_TIMEOUT = 0.25


class StartFailed(RuntimeError):
    """The server exited, or did not answer in time, while it was starting."""


def find_binary(executable: str) -> str:
    """The full path of `executable` on PATH, or a RuntimeError saying how to install it."""
    binary = shutil.which(executable)
    if binary is None:
        raise RuntimeError(
            f"{executable!r} was not found on PATH; install it with "
            f"`{_INSTALL_HINT}` (Debian/Ubuntu) or your platform's package manager"
        )
    return binary


def start_server(
    argv: Sequence[str], data_dir: DataDir, host: str, port: int, timeout: float
) -> subprocess.Popen[bytes]:
    """Spawn `argv` in `data_dir`, its output appended to the log, and wait until it
    answers on `host:port` as itself.

    On failure the process is reaped and StartFailed carries what this launch logged.
    """
    with data_dir.log.open("ab") as log:
        offset = log.tell()  # only what this launch writes explains a failure to start
        process = _spawn(argv, data_dir.path, log)
    failure: str | None = "interrupted"
    try:
        failure = _wait_until_ready(process, host, port, timeout)
    finally:
        if failure is not None:  # failed or interrupted: it must not run on unwatched
            kill_and_reap(process)
    if failure is None:
        return process
    log_text = data_dir.log_tail(30, offset)  # complete: the process is gone
    message = f"redis-server on port {port} failed to start: {failure}\n--- log ---\n{log_text}"
    raise (PortTaken if "Address already in use" in log_text else StartFailed)(message)


def _spawn(argv: Sequence[str], cwd: Path, log: BinaryIO) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=log,  # with no --logfile the server logs to stdout
        stderr=subprocess.STDOUT,
        # Safe despite threads: the hook only makes one prctl() call.
        preexec_fn=die_with_parent_hook(),  # noqa: PLW1509
    )


def _wait_until_ready(
    process: subprocess.Popen[bytes], host: str, port: int, timeout: float
) -> str | None:
    """None once `process` answers PING on `host:port` as itself, else why it never will."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return f"it exited with status {process.returncode}"
        if is_server(host, port, process.pid, _PROBE_TIMEOUT):
            return None
        time.sleep(_READY_POLL_INTERVAL)
    return f"it did not answer PING within {timeout:g} s"


Reach = Callable[[int, signal.Signals], None]
"""Sends a signal to a server: to its process, its process group, or every process it
forked (a server whose helpers start sessions of their own, as PostgreSQL's)."""


def signal_process(pid: int, signum: signal.Signals) -> None:
    """The server process alone."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def signal_group(pid: int, signum: signal.Signals) -> None:
    """The server's process group: a server started in a session of its own, and
    whatever it started there."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signum)


def kill_and_reap(process: subprocess.Popen[bytes], reach: Reach = signal_process) -> None:
    # SIGKILL works on a paused (SIGSTOPped) process too.
    if process.poll() is None:
        reach(process.pid, signal.SIGKILL)
    process.wait()


def terminate_and_reap(process: subprocess.Popen[bytes], grace: float,
                       reach: Reach = signal_process,
                       stop_signal: signal.Signals = signal.SIGTERM) -> None:
    """Ask the server to stop (coverage writes its data then), SIGKILL what lingers.

    The stop signal goes to the server process alone, which stops whatever it
    started; SIGCONT and SIGKILL go to all that `reach` reaches.
    """
    if process.poll() is None:
        reach(process.pid, signal.SIGCONT)  # a paused server cannot act on a signal
        signal_process(process.pid, stop_signal)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(grace)
    kill_and_reap(process, reach)


def die_with_parent_hook() -> Callable[[], None] | None:
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


def wait_for_run_state(pid: int, *, stopped: bool, timeout: float = 2.0) -> bool:
    """Wait until the kernel reports `pid` as stopped (or running), where /proc exists.

    Signals are delivered asynchronously: without this a request sent right after
    pause() could still be served. False if `timeout` passed first.
    """
    stat = Path(f"/proc/{pid}/stat")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True  # no /proc here, or the process is gone: nothing to wait for
        if (state in ("T", "t")) == stopped:
            return True
        time.sleep(0.002)
    return False
