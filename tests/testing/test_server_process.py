"""The base of the private servers, on a real process group: a Python parent that
announces itself and a child it forked, as an emulator in a session of its own."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys
from pathlib import Path

import pytest

from chatledger.testing._process import signal_group, signal_process
from chatledger.testing._server_process import ServerProcess
from tests.testing.test_redis_server import process_gone, wait_until

# The parent starts a child (in its process group), prints both pids, then waits.
_FAMILY = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(child.pid, flush=True)
time.sleep(60)
"""


class _Family(ServerProcess):
    def start(self) -> _Family:
        self.child = int(self._spawn_announcing([sys.executable, "-c", _FAMILY]))
        self._port = 1
        return self

    def stop(self) -> None:
        self._terminate(grace=5)
        # A graceful stop is the server's own to pass on to what it started; this
        # parent does not, so its child is killed here.
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.child, signal.SIGKILL)


def _stopped(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in ("T", "t")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_group_server_pauses_and_resumes_every_process_of_its_group() -> None:
    with _Family(reach=signal_group) as server:
        server.pause()
        assert wait_until(lambda: _stopped(server.child))
        assert _stopped(server.pid)
        server.resume()
        assert wait_until(lambda: not _stopped(server.child))
        assert not _stopped(server.pid)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_single_process_server_pauses_only_its_process() -> None:
    server = _Family(reach=signal_process).start()
    try:
        server.pause()
        assert _stopped(server.pid) and not _stopped(server.child)
    finally:
        server.stop()


def test_stop_reaps_a_paused_server_and_leaves_it_unreachable() -> None:
    server = _Family(reach=signal_group).start()
    pid = server.pid
    server.pause()
    server.stop()
    assert process_gone(pid)
    assert not server.running
    with pytest.raises(RuntimeError, match="is not running"):
        server.pause()
    with pytest.raises(RuntimeError, match="is not running"):
        _ = server.pid


def test_kill_reaches_the_whole_group() -> None:
    server = _Family(reach=signal_group).start()
    pid, child = server.pid, server.child
    server._kill()
    assert process_gone(pid)
    assert wait_until(lambda: process_gone(child))


def test_a_garbage_collected_server_is_killed_with_its_group() -> None:
    server = _Family(reach=signal_group).start()
    pid, child = server.pid, server.child
    del server
    gc.collect()
    assert process_gone(pid)
    assert wait_until(lambda: process_gone(child))


def test_a_server_never_started_has_no_port() -> None:
    with pytest.raises(RuntimeError, match="picked by start"):
        _ = _Family().port
