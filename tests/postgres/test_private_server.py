"""PostgresServer's clusters: ``initdb`` once per process, each server a copy of its own."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from chatledger.testing import _postgres_server
from chatledger.testing._postgres_server import PostgresServer, find_postgres_binary
from tests.testing.test_redis_server import gone_with_its_killed_parent


def test_a_second_server_runs_a_copy_of_the_never_started_template(
    postgres_server: PostgresServer,
) -> None:
    template = _postgres_server._template(find_postgres_binary("initdb"))
    assert not (template / "postmaster.pid").exists()  # never run: a clean cluster to copy
    with PostgresServer() as other:
        assert other.data_dir != postgres_server.data_dir
        with psycopg.connect(other.url, autocommit=True) as connection:
            connection.execute("CREATE TABLE only_in_the_copy (x int)")
            assert connection.execute("SHOW data_directory").fetchone() == (
                str(other.data_dir),)
        with psycopg.connect(postgres_server.url) as connection:
            found = connection.execute("SELECT to_regclass('only_in_the_copy')").fetchone()
        assert found == (None,)  # the copies share no file
    assert _postgres_server._template(find_postgres_binary("initdb")) == template
    assert not (template / "base").samefile(postgres_server.data_dir / "base")


@pytest.fixture
def failing_bin_dir() -> Iterator[Path]:
    """A bin directory whose ``initdb`` fails (readable by the postgres user when root)."""
    folder = Path(tempfile.mkdtemp(prefix="chatledger-bad-initdb-"))
    folder.chmod(0o755)
    initdb = folder / "initdb"
    initdb.write_text("#!/bin/sh\necho 'initdb: no space left' >&2\nexit 3\n")
    initdb.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def test_an_initdb_that_fails_is_reported_and_no_template_is_kept(
    failing_bin_dir: Path,
) -> None:
    server = PostgresServer(bin_dir=str(failing_bin_dir))
    try:
        with pytest.raises(RuntimeError, match=r"initdb failed \(3\)(.|\n)*no space left"):
            server.start()
    finally:
        server.stop()
    assert str(failing_bin_dir / "initdb") not in _postgres_server._TEMPLATES  # tried again


def test_a_copy_that_fails_is_reported(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="copying the cluster"):
        _postgres_server._copy_cluster(tmp_path / "no-such-template", tmp_path / "data")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux")
def test_a_server_does_not_outlive_a_killed_test_process() -> None:
    assert gone_with_its_killed_parent(
        "from chatledger.testing._postgres_server import PostgresServer; "
        "server = PostgresServer().start()", timeout=10)
