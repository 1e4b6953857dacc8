"""DynaliteServer: found or named as missing; with ``--backends`` naming dynalite (which
``scripts/dynalite`` installs and passes), started, paused and stopped like the other
emulator."""

from __future__ import annotations

import pytest

from chatledger import open_store
from chatledger.testing._dynalite_server import DynaliteServer
from tests.dynalite_fixtures import DYNALITE
from tests.testing.test_redis_server import process_gone


def test_a_missing_dynalite_says_how_to_install_it() -> None:
    server = DynaliteServer("/nonexistent/dynalite")
    with pytest.raises(RuntimeError, match="scripts/dynalite installs it"):
        server.start()
    assert not server.running


@pytest.mark.dynalite
def test_a_table_is_made_and_read_and_the_server_is_reaped() -> None:
    with DynaliteServer(str(DYNALITE)) as server:
        pid = server.pid
        url = server.table_url()
        with open_store(url) as store:
            assert store.session("s").read().version == 0
        server.pause()
        server.resume()
        with open_store(url) as store:
            assert store.session("s").info() is None
    assert process_gone(pid)
