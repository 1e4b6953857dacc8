"""RedisServer against real redis-server processes: lifecycle, faults, RESP, cleanup."""

from __future__ import annotations

import gc
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from chatledger.testing import _ports
from chatledger.testing import _redis_server as redis_server
from chatledger.testing._redis_server import RedisCommandError, RedisServer, free_port

PING = b"*1\r\n$4\r\nPING\r\n"
PONG = b"+PONG\r\n"
SRC_DIR = Path(redis_server.__file__).resolve().parents[2]


def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def process_gone(pid: int) -> bool:
    """True once `pid` no longer runs (a zombie left to a non-reaping init counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in ("Z", "X")


@pytest.fixture
def server() -> Iterator[RedisServer]:
    with RedisServer() as running:
        yield running


def test_start_answers_ping_and_stop_reaps_process_and_dir() -> None:
    server = RedisServer().start()
    try:
        assert server.running
        assert server.command("PING") == "PONG"
        assert server.url == f"redis://127.0.0.1:{server.port}/0"
        pid, data_dir = server.pid, server.data_dir
        assert (data_dir / "redis.log").exists()
    finally:
        server.stop()
    assert not server.running
    assert process_gone(pid)
    assert not data_dir.exists()
    with pytest.raises(RuntimeError):
        _ = server.pid


def test_command_decodes_every_resp2_reply_type(server: RedisServer) -> None:
    assert server.command("SET", "greeting", "hello") == "OK"
    assert server.command("GET", "greeting") == b"hello"
    assert server.command("GET", "missing") is None
    assert server.command("SET", b"binary", b"a\r\nb\x00") == "OK"
    assert server.command("GET", "binary") == b"a\r\nb\x00"
    assert server.command("INCRBY", "counter", 41) == 41
    assert server.command("INCRBYFLOAT", "float", 1.5) == b"1.5"
    assert server.command("RPUSH", "list", "a", "b", "") == 3
    assert server.command("LRANGE", "list", 0, -1) == [b"a", b"b", b""]
    assert server.command("CONFIG", "GET", "appendonly") == [b"appendonly", b"no"]
    assert server.command("BLPOP", "empty-list", "0.01") is None  # a RESP2 null array


def test_error_reply_raises_runtime_error(server: RedisServer) -> None:
    server.command("SET", "text", "not a number")
    with pytest.raises(RedisCommandError, match="not an integer") as caught:
        server.command("INCR", "text")
    assert isinstance(caught.value, RuntimeError)
    with pytest.raises(TypeError):
        server.command("SET", "flag", True)


def test_config_set_through_command(server: RedisServer) -> None:
    assert server.command("CONFIG", "SET", "maxmemory-policy", "allkeys-lru") == "OK"
    assert server.command("CONFIG", "GET", "maxmemory-policy") == [
        b"maxmemory-policy",
        b"allkeys-lru",
    ]


def test_pause_holds_replies_until_resume(server: RedisServer) -> None:
    with socket.create_connection((server.host, server.port), timeout=5) as client:
        server.pause()
        client.sendall(PING)
        client.settimeout(0.3)
        with pytest.raises(TimeoutError):
            client.recv(64)
        server.resume()
        client.settimeout(5)
        assert client.recv(64) == PONG
    assert server.command("PING") == "PONG"


def test_kill_leaves_port_refusing_connections(server: RedisServer) -> None:
    pid = server.pid
    server.kill()
    assert not server.running
    assert process_gone(pid)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((server.host, server.port), timeout=2).close()


def test_restart_empty_comes_back_on_same_port_without_data(server: RedisServer) -> None:
    port, pid = server.port, server.pid
    server.command("SET", "key", "value")
    server.restart(empty=True)
    assert server.port == port
    assert server.pid != pid
    assert server.command("GET", "key") is None


def test_restart_keeps_aof_data_and_empty_restart_drops_it() -> None:
    with RedisServer(appendonly=True, extra_args=("--appendfsync", "always")) as server:
        server.command("SET", "durable", "yes")
        server.restart(empty=False)
        assert server.command("GET", "durable") == b"yes"
        server.restart(empty=True)
        assert server.command("GET", "durable") is None


def test_restart_after_kill_starts_again(server: RedisServer) -> None:
    server.kill()
    server.restart()
    assert server.command("PING") == "PONG"


def test_missing_binary_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"apt-get install -y redis-server"):
        RedisServer().start()


def test_startup_failure_reports_the_log_and_leaves_no_process() -> None:
    server = RedisServer(extra_args=("--no-such-directive", "1"))
    with pytest.raises(RuntimeError, match="FATAL CONFIG") as caught:
        server.start()
    assert "failed to start" in str(caught.value)
    assert not server.running
    server.stop()


def test_taken_explicit_port_fails_loudly() -> None:
    with socket.create_server(("127.0.0.1", 0)) as squatter:
        port = squatter.getsockname()[1]
        with pytest.raises(RuntimeError, match="Address already in use"):
            RedisServer(port=port).start()


def test_picked_port_taken_meanwhile_is_retried(
    server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The squatter is another redis-server: answering PING on the port is not enough.
    picks = iter([server.port])
    monkeypatch.setattr(_ports, "free_port", lambda host: next(picks, 0) or free_port())
    with RedisServer() as second:
        assert second.port != server.port
        info = second.command("INFO", "server")
        assert isinstance(info, bytes)
        assert f"process_id:{second.pid}".encode() in info
    assert server.command("PING") == "PONG"


def test_stop_terminates_gracefully_and_keeps_a_given_dir(tmp_path: Path) -> None:
    with RedisServer(dir=tmp_path) as server:
        assert "Ready to accept connections" in server.log_tail(50)
    assert tmp_path.exists()
    assert "ready to exit, bye bye" in server.log_tail(5)


def test_stop_reaps_a_paused_server(server: RedisServer) -> None:
    pid = server.pid
    server.pause()
    server.stop(timeout=5)
    assert process_gone(pid)


def test_garbage_collected_server_is_killed() -> None:
    server = RedisServer().start()
    pid = server.pid
    del server
    gc.collect()
    assert process_gone(pid)


def _spawn_python(code: str) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SRC_DIR), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_server_does_not_outlive_an_interpreter_that_never_stopped_it() -> None:
    # Started from a worker thread, so only the exit-time finalizer can reap it.
    child = _spawn_python(
        """
        import threading
        from chatledger.testing._redis_server import RedisServer
        servers = []
        worker = threading.Thread(target=lambda: servers.append(RedisServer().start()))
        worker.start(); worker.join()
        print(servers[0].pid, flush=True)
        """
    )
    out, _ = child.communicate(timeout=30)
    assert child.returncode == 0
    assert process_gone(int(out))


def gone_with_its_killed_parent(start: str, timeout: float = 5.0) -> bool:
    """Whether a server started in a child Python by ``start`` (one line binding
    ``server``) stops when that child is killed outright, no cleanup running."""
    child = _spawn_python(
        f"""
        import time
        {start}
        print(server.pid, flush=True)
        time.sleep(60)
        """
    )
    try:
        assert child.stdout is not None
        pid = int(child.stdout.readline())
        assert not process_gone(pid)
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=30)
    return wait_until(lambda: process_gone(pid), timeout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux")
def test_server_does_not_outlive_a_killed_test_process(tmp_path: Path) -> None:
    assert gone_with_its_killed_parent(
        "from chatledger.testing._redis_server import RedisServer; "
        f"server = RedisServer(dir={str(tmp_path)!r}).start()")


def test_free_port_is_bindable() -> None:
    port = free_port()
    with socket.create_server(("127.0.0.1", port)):
        pass


def test_info_returns_a_section_as_text() -> None:
    with RedisServer() as server:
        assert b"role:master" in server.info("replication")
        assert f"tcp_port:{server.port}".encode() in server.info("server")


def test_starting_a_running_server_again_is_an_error(server: RedisServer) -> None:
    with pytest.raises(RuntimeError, match="already running"):
        server.start()
    assert server.command("PING") == "PONG"


def test_an_explicit_free_port_is_used() -> None:
    port = free_port()
    with RedisServer(port=port) as server:
        assert server.port == port
        assert f"tcp_port:{port}".encode() in server.info("server")


def test_a_server_that_never_started_has_no_port_and_cannot_restart_or_pause() -> None:
    server = RedisServer()
    with pytest.raises(RuntimeError, match="picked by start"):
        _ = server.port
    with pytest.raises(RuntimeError, match="started before"):
        server.restart()
    with pytest.raises(RuntimeError, match="not running"):
        server.pause()
    assert server.log_tail() == ""  # and no directory was made just to say so


def test_every_picked_port_taken_gives_up_after_a_few_attempts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as squatter:
        monkeypatch.setattr(_ports, "free_port", lambda host: squatter.getsockname()[1])
        server = RedisServer()
        with pytest.raises(RuntimeError, match="no free port in 5 attempts"):
            server.start()
    assert not server.running


def test_a_server_that_does_not_answer_in_time_is_killed() -> None:
    server = RedisServer(startup_timeout=0)
    with pytest.raises(RuntimeError, match="did not answer PING within 0 s"):
        server.start()
    assert not server.running
    server.stop()


def test_a_given_dir_without_a_log_yet_has_an_empty_tail(tmp_path: Path) -> None:
    assert RedisServer(dir=tmp_path).log_tail() == ""


def test_a_server_that_died_on_its_own_is_still_cleaned_up_by_stop() -> None:
    server = RedisServer().start()
    pid, data_dir = server.pid, server.data_dir
    os.kill(pid, signal.SIGKILL)
    assert wait_until(lambda: not server.running)
    server.stop()
    assert process_gone(pid)
    assert not data_dir.exists()


def test_an_empty_restart_deletes_the_rdb_file_the_arguments_name() -> None:
    # As in redis, the last of two --dbfilename wins.
    names = ("--dbfilename", "first.rdb", "--dbfilename", "custom.rdb")
    with RedisServer(extra_args=names) as server:
        server.command("SET", "saved", "yes")
        assert server.command("SAVE") == "OK"
        assert (server.data_dir / "custom.rdb").exists()
        server.restart(empty=True)
        assert not (server.data_dir / "custom.rdb").exists()
        assert server.command("GET", "saved") is None
