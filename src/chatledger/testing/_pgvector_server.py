"""A private PostgreSQL with the pgvector extension, from PyPI's ``pgserver``.

Debian 12 packages no pgvector; the ``pgserver`` wheel (``pip install
pgserver``, in the ``dev`` extra) ships PostgreSQL 16 binaries with it. A
:class:`~._postgres_server.PostgresServer` runs those binaries (as the
``postgres`` user when run as root: the venv must be readable and its binaries
executable by that user) and its database has ``CREATE EXTENSION vector`` run.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import subprocess
from pathlib import Path

import psycopg

from ._postgres_server import PostgresServer

__all__ = ["pgvector_bin_dir", "pgvector_server"]

_HINT = "install it with `pip install pgserver==0.1.4` (in chatledger's dev extra)"


def pgvector_bin_dir() -> str:
    """The ``bin`` directory of pgserver's PostgreSQL, checked runnable by the server's user."""
    spec = importlib.util.find_spec("pgserver")  # found, not imported: its import warns
    if spec is None or spec.origin is None:
        raise RuntimeError(f"pgvector tests need the pgserver wheel: {_HINT}")
    found = Path(spec.origin).parent / "pginstall" / "bin"
    if not (found / "postgres").is_file():
        raise RuntimeError(f"pgserver has no PostgreSQL binaries at {found}: {_HINT}")
    _check_runnable(found / "postgres")
    return str(found)


def _check_runnable(binary: Path) -> None:
    """Run ``postgres --version`` as the user the server will run as; raise if it cannot."""
    user = "postgres" if os.geteuid() == 0 else None
    if user is not None:
        pwd.getpwnam(user)  # KeyError: no such user, as PostgresServer would find
    done = subprocess.run([str(binary), "--version"], capture_output=True, check=False,
                          user=user, group=user)
    if done.returncode != 0:
        raise RuntimeError(f"{binary} does not run as {user or 'this user'} "
                           f"({done.returncode}): {done.stderr.decode(errors='replace')}"
                           "; make the venv readable and its binaries executable by it")


def pgvector_server(**options: object) -> PostgresServer:
    """A started private server whose database has the ``vector`` extension."""
    server = PostgresServer(bin_dir=pgvector_bin_dir(), **options)  # type: ignore[arg-type]
    server.start()
    try:
        with psycopg.connect(server.url, autocommit=True) as connection:
            connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except BaseException:
        server.stop()
        raise
    return server
