"""A private PostgreSQL cluster for a benchmark: never a shared server.

``private_postgres()`` runs ``initdb`` and ``pg_ctl`` from the newest
``/usr/lib/postgresql/*/bin`` (or the PATH) in a temporary directory, as the
``postgres`` user when run as root (``runuser -u postgres --``, else
``su postgres -c``), with trust authentication on a free loopback port, and
yields its URL; on leaving, the cluster is stopped and its directory deleted.
The server keeps PostgreSQL's defaults otherwise (``fsync`` and
``synchronous_commit`` on), as a user's would.

``postgres_missing()`` says why one cannot start here (None: it can).
``private_postgres(bin_dir=Path(pgvector_bin_dir()))`` runs pgserver's binaries, whose
share holds pgvector (``chatledger.testing._pgvector_server``).
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from chatledger.testing import free_port

USER = "postgres"
PORT_ATTEMPTS = 3


def _bin_dir() -> Path | None:
    """The directory holding initdb and pg_ctl: the newest Debian-style one, else the PATH's."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                   key=lambda p: _version_key(p.parent.name))
    for directory in reversed(found):
        if (directory / "initdb").exists() and (directory / "pg_ctl").exists():
            return directory
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl and Path(initdb).parent == Path(pg_ctl).parent:
        return Path(initdb).parent
    return None


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(p) for p in name.split(".") if p.isdigit())


def _as_postgres(argv: list[str]) -> list[str]:
    if os.geteuid() != 0:  # initdb refuses root only; anyone else runs it as themselves
        return argv
    if shutil.which("runuser"):
        return ["runuser", "-u", USER, "--", *argv]
    return ["su", USER, "-c", shlex.join(argv)]


def postgres_missing() -> str | None:
    """Why a private cluster cannot start here, or None."""
    if _bin_dir() is None:
        return "initdb and pg_ctl not found (/usr/lib/postgresql/*/bin, PATH)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(USER)
        except KeyError:
            return f"running as root and there is no {USER!r} user to run initdb as"
    return None


def _run(argv: list[str]) -> None:
    done = subprocess.run(_as_postgres(argv), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} failed ({done.returncode}):\n"
                           f"{done.stdout}{done.stderr}")


@contextmanager
def private_postgres(settings: dict[str, str] | None = None,
                     bin_dir: Path | None = None) -> Iterator[str]:
    """A fresh cluster's URL (user postgres, database postgres, trust auth).

    ``settings``: server parameters set at start (``-c name=value``), such as
    ``shared_preload_libraries`` for a profile; none by default. ``bin_dir``: whose
    binaries (None: the newest Debian-style ones, else the PATH's).
    """
    bin_dir = bin_dir or _bin_dir()
    if bin_dir is None:
        raise RuntimeError(postgres_missing() or "no PostgreSQL binaries")
    base = Path(tempfile.mkdtemp(prefix="chatledger-bench-pg-"))
    data, log = base / "data", base / "server.log"
    pg_ctl = str(bin_dir / "pg_ctl")
    started = False
    try:
        if os.geteuid() == 0:
            shutil.chown(base, user=USER, group=None)
        _run([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", USER,
              "-E", "UTF8", "--no-sync"])
        for attempt in range(PORT_ATTEMPTS):
            port = free_port()
            options = (f"-p {port} -c listen_addresses=127.0.0.1"
                       f" -c unix_socket_directories={base}"
                       + "".join(f" -c {name}={value}" for name, value in (settings or {}).items()))
            try:
                _run([pg_ctl, "-D", str(data), "-l", str(log), "-w", "-t", "60",
                      "-o", options, "start"])
            except RuntimeError:
                if attempt == PORT_ATTEMPTS - 1:
                    raise RuntimeError(log.read_text() if log.exists() else "") from None
                continue
            started = True
            break
        yield f"postgresql://{USER}@127.0.0.1:{port}/postgres"
    finally:
        if started:
            _run([pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"])
        shutil.rmtree(base, ignore_errors=True)
