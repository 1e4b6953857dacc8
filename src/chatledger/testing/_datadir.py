"""The working directory of a `RedisServer`: its data files and its log.

A server either works in a directory the test gave it, which outlives the server,
or in a temporary one it owns, made on first use and removed on `stop()`.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

LOG_FILENAME = "redis.log"


class DataDir:
    """A given directory, or a temporary one owned by the server (made on first use)."""

    def __init__(self, given: Path | None) -> None:
        self._given = given
        self._owned: tempfile.TemporaryDirectory[str] | None = None

    @property
    def path(self) -> Path:
        if self._given is not None:
            return self._given
        if self._owned is None:
            self._owned = tempfile.TemporaryDirectory(prefix="chatledger-redis-")
        return Path(self._owned.name)

    def create(self) -> Path:
        """The directory's path, made first if it does not exist yet."""
        path = self.path
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def log(self) -> Path:
        return self.path / LOG_FILENAME

    def log_tail(self, lines: int, offset: int = 0) -> str:
        """The last `lines` lines of the log from byte `offset`; "" with no directory (yet)."""
        if self._given is None and self._owned is None:
            return ""  # don't make a directory just to find it empty
        return tail(self.log, lines, offset)

    def remove_owned(self) -> None:
        """Remove the directory if the server owns it; a given one stays."""
        if self._owned is not None:
            self._owned.cleanup()
            self._owned = None

    def delete_data_files(self, server_args: Sequence[str]) -> None:
        """Delete the RDB and AOF files, where `server_args` (or the defaults) put them."""
        directory = self.path
        (directory / _option(server_args, "dbfilename", "dump.rdb")).unlink(missing_ok=True)
        # Redis < 7 keeps one AOF file; Redis >= 7 keeps a directory of them.
        aof_file = _option(server_args, "appendfilename", "appendonly.aof")
        (directory / aof_file).unlink(missing_ok=True)
        aof_dir = directory / _option(server_args, "appenddirname", "appendonlydir")
        shutil.rmtree(aof_dir, ignore_errors=True)


def tail(path: Path, lines: int, offset: int = 0) -> str:
    """The last `lines` lines of the file at `path` from byte `offset` ("" if unreadable)."""
    try:
        with path.open("rb") as log:
            log.seek(offset)
            text = log.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:]) if lines > 0 else ""


def _option(args: Sequence[str], name: str, default: str) -> str:
    """The value of ``--name`` in `args` (the last one wins, as in redis), else `default`."""
    value = default
    for flag, argument in itertools.pairwise(args):
        if flag == f"--{name}":
            value = argument
    return value
