"""The pooled connection's context (``_Lent``: ``_connection()``): psycopg's errors
translated wherever they arise (handing the connection out, the call, giving it
back), the connection returned to the pool in every case."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from chatledger import BackendError, BackendUnavailable, user
from tests.postgres.conftest import OpenPostgres


def test_a_failure_handing_a_connection_out_is_translated(
        open_postgres: OpenPostgres, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_postgres()
    backend = store._backend

    def refused(pool: Any) -> Any:
        raise psycopg.OperationalError("the pool broke")

    monkeypatch.setattr(backend, "_getconn", refused)
    with pytest.raises(BackendUnavailable, match="the pool broke"):
        store.session("s").append([user("a")])


def test_an_error_of_the_call_is_translated_and_the_connection_goes_back(
        open_postgres: OpenPostgres) -> None:
    store = open_postgres(max_connections=1)
    backend: Any = store._backend
    with pytest.raises(BackendError, match="division by zero"), \
            backend._connection() as connection:
        connection.execute("SELECT 1 / 0")
    store.session("s").append([user("a")])  # the one connection was given back
    assert store.session("s").read().version == 1


def test_a_failure_giving_the_connection_back_is_translated(
        open_postgres: OpenPostgres, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_postgres()
    backend: Any = store._backend
    store.session("s").append([user("a")])
    real = backend._pool.putconn

    def broken(connection: Any) -> None:
        real(connection)
        raise psycopg.InterfaceError("the pool is gone")

    monkeypatch.setattr(backend._pool, "putconn", broken)
    with pytest.raises(BackendUnavailable, match="the pool is gone"):
        store.session("s").read()
