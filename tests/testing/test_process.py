"""Process control helpers of RedisServer, on real processes."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from chatledger.testing import _process

SRC_DIR = Path(_process.__file__).resolve().parents[2]


def test_wait_for_run_state_reports_whether_the_state_was_reached() -> None:
    me = os.getpid()
    assert _process.wait_for_run_state(me, stopped=False)
    assert not _process.wait_for_run_state(me, stopped=True, timeout=0.05)  # never stopped


def test_wait_for_run_state_has_nothing_to_wait_for_once_the_process_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: its pid names no process
    assert _process.wait_for_run_state(child.pid, stopped=True, timeout=60)


def test_wait_for_run_state_sees_a_stopped_and_a_continued_process() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        os.kill(child.pid, signal.SIGSTOP)
        assert _process.wait_for_run_state(child.pid, stopped=True)
        os.kill(child.pid, signal.SIGCONT)
        assert _process.wait_for_run_state(child.pid, stopped=False)
    finally:
        child.kill()
        child.wait()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux")
def test_the_hook_asks_the_kernel_to_kill_the_child_with_its_parent() -> None:
    code = """
        import ctypes, signal
        from chatledger.testing._process import die_with_parent_hook
        hook = die_with_parent_hook()
        hook()
        libc = ctypes.CDLL(None, use_errno=True)
        value = ctypes.c_int()
        libc.prctl(2, ctypes.byref(value))  # PR_GET_PDEATHSIG
        print(value.value == signal.SIGKILL)
    """
    path = os.pathsep.join([str(SRC_DIR), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
        timeout=60, check=True,
    ).stdout
    assert out.strip() == "True"


def test_no_hook_off_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert _process.die_with_parent_hook() is None


def test_no_hook_from_a_thread_that_is_not_the_main_one() -> None:
    hooks = []
    worker = threading.Thread(target=lambda: hooks.append(_process.die_with_parent_hook()))
    worker.start()
    worker.join(5)
    assert hooks == [None]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux")
def test_no_hook_without_a_c_library_to_call(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_library(*args: object, **kwargs: object) -> None:
        raise OSError("no C library here")

    monkeypatch.setattr(ctypes, "CDLL", no_library)
    assert _process.die_with_parent_hook() is None
