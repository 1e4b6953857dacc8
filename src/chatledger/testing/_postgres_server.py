"""Private PostgreSQL servers for tests: ``initdb`` and ``postgres`` in a temp dir.

`PostgresServer` makes a new cluster (``initdb``) in a temporary directory and
runs its own ``postgres`` on a free loopback port, so tests can kill, pause
(SIGSTOP) and restart it; a shared server (on 5432) is never touched::

    with PostgresServer() as server:
        store = open_store(server.url + "?migrate=true")
        server.pause()      # every server process stops: connections hang
        server.resume()
        server.restart()    # SIGKILL, then crash recovery: committed data stays

The binaries come from ``bin_dir`` when given, else
``/usr/lib/postgresql/<version>/bin`` (Debian's ``postgresql`` package) or
PATH. PostgreSQL refuses to run as root: when the tests run as root, the
cluster belongs to the ``postgres`` user and the server runs as it. Its
forked processes (one per connection, and helpers) start sessions of their
own, so signals reach them one by one: pausing or killing the server signals
the postmaster and every child it has. It runs with
``fsync=off``: a killed server keeps what it committed (the kernel has it);
only a power cut would lose it, which tests do not simulate. A process runs
``initdb`` once per set of binaries: later clusters are copies of that first,
never-started one (what ``initdb`` would write again, in a fraction of its time).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import psycopg

from ._ports import PortTaken, launch_on_free_port
from ._process import die_with_parent_hook
from ._server_process import ServerProcess

__all__ = ["PostgresServer", "find_postgres_binary"]

_INSTALL_HINT = "apt-get install -y postgresql"
_USER = "postgres"


def find_postgres_binary(name: str) -> str:
    """The newest ``/usr/lib/postgresql/*/bin/NAME``, else NAME on PATH."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                   key=lambda path: int(Path(path).parts[-3]) if Path(path).parts[-3].isdigit()
                   else 0)
    binary = found[-1] if found else shutil.which(name)
    if binary is None:
        raise RuntimeError(f"{name!r} was found neither in /usr/lib/postgresql/*/bin nor on "
                           f"PATH; install PostgreSQL with `{_INSTALL_HINT}` (Debian/Ubuntu)")
    return binary


class PostgresServer(ServerProcess):
    """A private PostgreSQL cluster on 127.0.0.1, for one test or one test session."""

    def __init__(self, *, startup_timeout: float = 30.0, database: str = "chatledger",
                 settings: Mapping[str, str] | None = None, bin_dir: str | None = None) -> None:
        super().__init__(reach=_signal_all)
        self.bin_dir = bin_dir  # None: find_postgres_binary's search
        self.startup_timeout = startup_timeout
        self.database = database
        # Server settings (``-c name=value``) over the defaults: fsync off, 200 connections.
        self.settings = {"fsync": "off", "max_connections": "200", **(settings or {})}
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> PostgresServer:
        """Make the cluster and its database, start the server; wait until it answers."""
        self._tmp = tempfile.TemporaryDirectory(prefix="chatledger-pg-")
        os.chmod(self._tmp.name, 0o755)
        self._initdb()
        launch_on_free_port(self._launch, self.host)
        self._create_database()
        return self

    def stop(self) -> None:
        """Stop the server (fast shutdown, SIGKILL if it lingers) and remove its files."""
        try:
            self._terminate(grace=10, stop_signal=signal.SIGINT)
        finally:
            if self._tmp is not None:
                self._tmp.cleanup()
                self._tmp = None

    def kill(self) -> None:
        """SIGKILL every server process; the cluster's files stay."""
        self._kill()

    def restart(self) -> None:
        """Kill the server and start it again on the same port; it recovers its data."""
        self.kill()
        self._launch(self.port)

    def __repr__(self) -> str:
        return f"PostgresServer(port={self._port}, {'running' if self.running else 'stopped'})"

    # -- state ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``postgresql://postgres@127.0.0.1:PORT/chatledger`` (trust authentication)."""
        return f"postgresql://{_USER}@{self.host}:{self.port}/{self.database}"

    @property
    def data_dir(self) -> Path:
        if self._tmp is None:
            raise RuntimeError(f"{self!r} has no cluster")
        return Path(self._tmp.name) / "data"

    def log_tail(self, lines: int = 30) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self._log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    # -- internals -----------------------------------------------------------------------

    def _binary(self, name: str) -> str:
        if self.bin_dir is None:
            return find_postgres_binary(name)
        return str(Path(self.bin_dir) / name)

    @property
    def _log(self) -> Path:
        return self.data_dir.parent / "postgres.log"

    def _initdb(self) -> None:
        _give_to_server_user(self.data_dir.parent)
        _copy_cluster(_template(self._binary("initdb")), self.data_dir)

    def _launch(self, port: int) -> None:
        self._port = port
        argv = [self._binary("postgres"), "-D", str(self.data_dir), "-p", str(port),
                "-c", f"listen_addresses={self.host}", "-c", "unix_socket_directories=",
                "-c", "logging_collector=off",
                *(arg for name, value in self.settings.items()
                  for arg in ("-c", f"{name}={value}"))]
        user = _server_user()
        with self._log.open("ab") as log:
            offset = log.tell()
            # The parent-death signal is set after Popen's switch to the server's user
            # (a change of user clears it): a test process killed outright takes the
            # server with it, as it does its redis-servers.
            self._adopt(subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, user=user, group=user,
                preexec_fn=die_with_parent_hook()))  # noqa: PLW1509
        failure = self._wait_until_ready()
        if failure is not None:
            self._kill()
            text = self._log.read_bytes()[offset:].decode(errors="replace")
            message = f"postgres on port {port} failed to start: {failure}\n--- log ---\n{text}"
            raise (PortTaken if "could not bind" in text or "in use" in text
                   else RuntimeError)(message)

    def _wait_until_ready(self) -> str | None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                return "it exited"
            try:
                psycopg.connect(host=self.host, port=self.port, user=_USER, dbname="postgres",
                                connect_timeout=2).close()
                return None
            except psycopg.OperationalError:
                time.sleep(0.05)
        return f"it did not accept connections within {self.startup_timeout:g} s"

    def _create_database(self) -> None:
        with psycopg.connect(host=self.host, port=self.port, user=_USER, dbname="postgres",
                             autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{self.database}"')


# Per process: the initdb binary -> a cluster it made, never started (copied, not run).
_TEMPLATES: dict[str, tempfile.TemporaryDirectory[str]] = {}
_TEMPLATES_LOCK = threading.Lock()


def _template(initdb: str) -> Path:
    """The data directory ``initdb`` made in this process, made on first use.

    ``initdb`` was most of a server's start (about a second of CPU); a copy of the
    cluster it wrote is the same cluster: the data directory holds no path or port.
    """
    with _TEMPLATES_LOCK:
        if initdb not in _TEMPLATES:
            folder = tempfile.TemporaryDirectory(prefix="chatledger-pg-template-")
            os.chmod(folder.name, 0o755)
            try:
                _run_initdb(initdb, Path(folder.name) / "data")
            except BaseException:
                folder.cleanup()
                raise
            _TEMPLATES[initdb] = folder
        return Path(_TEMPLATES[initdb].name) / "data"


def _run_initdb(initdb: str, data_dir: Path) -> None:
    data_dir.mkdir()
    _give_to_server_user(data_dir.parent)
    _give_to_server_user(data_dir)
    argv = [initdb, "-D", str(data_dir), "-U", _USER,
            "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"]
    user = _server_user()
    done = subprocess.run(argv, capture_output=True, check=False, user=user, group=user)
    if done.returncode != 0:
        raise RuntimeError(f"initdb failed ({done.returncode}):\n"
                           f"{done.stdout.decode(errors='replace')}"
                           f"{done.stderr.decode(errors='replace')}")


def _copy_cluster(template: Path, data_dir: Path) -> None:
    """Copy a stopped cluster's files as the server's user, modes kept (PostgreSQL
    wants its folder 0700); ``cp`` takes a fifth of the CPU of a copy in Python."""
    user = _server_user()
    done = subprocess.run(["cp", "-a", str(template), str(data_dir)], capture_output=True,
                          check=False, user=user, group=user)
    if done.returncode != 0:
        raise RuntimeError(f"copying the cluster {template} failed ({done.returncode}): "
                           f"{done.stderr.decode(errors='replace')}")


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def _signal_all(pid: int, signum: signal.Signals) -> None:
    """Signal the postmaster, then its children.

    Children are listed before (a dead postmaster's children get another
    parent) and after (one forked meanwhile) the postmaster is signalled.
    """
    before = _children(pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)
    for child in {*before, *_children(pid)}:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(child, signum)


def _server_user() -> str | None:
    """Run as ``postgres`` when we are root: PostgreSQL refuses to run as root."""
    return _USER if os.geteuid() == 0 else None


def _give_to_server_user(path: Path) -> None:
    if os.geteuid() == 0:
        entry = pwd.getpwnam(_USER)
        os.chown(path, entry.pw_uid, entry.pw_gid)
