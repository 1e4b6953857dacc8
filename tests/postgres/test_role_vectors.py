"""Least privilege with pgvector: the Security page's grants on ``item_vectors`` let the
application role search by distance; doctor names each one it lacks."""

from __future__ import annotations

import uuid

from chatledger import open_store
from chatledger._backends.postgres.checks import CHECKED, PRIVILEGES
from chatledger.langgraph import LedgerStore
from chatledger.testing._postgres_server import PostgresServer
from tests.langgraph.test_store_pgvector import _index
from tests.postgres.test_role import as_role, documented_sql, run


def test_the_documented_vector_grant_searches_by_distance_and_doctor_names_it(
        pgvector_server: PostgresServer) -> None:
    database = f"roles_{uuid.uuid4().hex[:8]}"
    run(pgvector_server.url, f"CREATE DATABASE {database}")
    admin = pgvector_server.url.rsplit("/", 1)[0] + f"/{database}"
    run(admin, "CREATE EXTENSION vector")  # the administrator's step
    superuser, grants, vectors = documented_sql()
    run(admin, superuser.replace("ON DATABASE app", f"ON DATABASE {database}"))
    owner = as_role(pgvector_server, "chatledger_owner").rsplit("/", 1)[0] + f"/{database}"
    app = as_role(pgvector_server, "chatledger_app").rsplit("/", 1)[0] + f"/{database}"
    open_store(f"{owner}?migrate=true").close()  # migrate-schema: the table too
    run(owner, grants)
    with LedgerStore(open_store(app), index=_index(), owns_store=True) as store:
        assert not store._by_distance  # the table's grants are not given yet
    run(owner, vectors)
    with LedgerStore(open_store(app, namespace="bot"), index=_index(),
                     owns_store=True) as store:
        assert store._by_distance
        store.put(("d",), "k", {"text": "a"})
        store.put(("d",), "k", {"text": "b"})  # a put replaces the older version's rows
        assert [i.key for i in store.search(("d",), query="a")] == ["k"]
        found = {check.name: check for check in store.store._backend.checks()}
        assert found["permissions"].status == "ok"
        assert f"({CHECKED} checked)" in found["permissions"].detail
        for table, privilege in PRIVILEGES:
            if table != "item_vectors":
                continue
            run(owner, f"REVOKE {privilege} ON chatledger.{table} FROM chatledger_app")
            found = {check.name: check for check in store.store._backend.checks()}
            run(owner, f"GRANT {privilege} ON chatledger.{table} TO chatledger_app")
            assert (found["permissions"].status, found["permissions"].value) == (
                "fail", [f"{privilege} ON chatledger.{table}"]), privilege
            run(owner, f"REVOKE {privilege} ON chatledger.{table} FROM chatledger_app")
            try:
                with LedgerStore(open_store(app), index=_index(), owns_store=True) as without:
                    assert not without._by_distance, privilege  # searches in Python
            finally:
                run(owner, f"GRANT {privilege} ON chatledger.{table} TO chatledger_app")
