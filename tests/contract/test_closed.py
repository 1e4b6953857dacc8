"""A closed store is unusable on every backend: its calls raise, none is served."""

from __future__ import annotations

import pytest

from chatledger import BackendError, user
from tests.conftest import OpenLedger


def test_a_closed_store_refuses_reads_and_writes(open_ledger: OpenLedger) -> None:
    store = open_ledger()
    session = store.session("s")
    session.append([user("before")])
    store.close()
    for call in (lambda: session.append([user("after")]), session.read, session.info,
                 lambda: list(store.sessions()), session.delete):
        with pytest.raises(BackendError, match="closed"):
            call()
    store.close()  # closing again is harmless
