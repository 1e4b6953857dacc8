"""Least privilege on PostgreSQL: the roles of the Security page, made from its
own SQL (so the page cannot drift), run the store; doctor names a missing grant."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from chatledger import Keyring, open_store, user
from chatledger._backends.postgres.checks import CHECKED, PRIVILEGES
from chatledger._cli import main
from chatledger.testing._postgres_server import PostgresServer

DOCS = Path(__file__).parents[2] / "docs" / "security.md"


def documented_sql() -> tuple[str, str, str]:
    """The superuser's block, the owner's block and the owner's pgvector block of the
    PostgreSQL section."""
    section = DOCS.read_text(encoding="utf-8").split("## Least privilege on PostgreSQL")[1]
    section = section.split("\n## ")[0]
    superuser, owner, vectors = re.findall(r"```sql\n(.*?)```", section, re.S)
    return superuser, owner, vectors


def as_role(server: PostgresServer, role: str) -> str:
    return server.url.replace("//postgres@", f"//{role}:PASSWORD@")


def run(url: str, sql: str) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(sql.encode())


def doctor(url: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["doctor", url, "--namespace", "bot"])
    return result.exit_code, result.output


def test_the_documented_role_runs_the_store_and_doctor_names_each_missing_grant() -> None:
    with PostgresServer(settings={"fsync": "on"}) as server:  # so doctor's only fail is ours
        _roles_on(server)


def _roles_on(private_postgres: PostgresServer) -> None:
    superuser, grants, _ = documented_sql()
    run(private_postgres.url, superuser.replace("ON DATABASE app", "ON DATABASE chatledger"))
    owner, app = as_role(private_postgres, "chatledger_owner"), as_role(private_postgres,
                                                                        "chatledger_app")
    migrated = CliRunner().invoke(main, ["migrate-schema", owner])
    assert migrated.exit_code == 0, migrated.output
    run(owner, grants)

    keyring = Keyring({"k": Keyring.new_key()}, current="k")
    with open_store(app, namespace="bot") as store:
        session = store.session("s")
        session.append([user("a"), user("b"), user("c")])
        assert [m.text for m in session.read(last=2)] == ["b", "c"]
        assert session.trim(keep_last=2) == 1
        assert list(store.sessions()) == ["s"]
        store.session("t").append([user("x")])
        assert store.session("t").delete() is True
    with open_store(app, namespace="bot", encryption=keyring) as store:
        assert store.rotate_key().encrypted == 2
        assert [m.text for m in store.session("s").read()] == ["b", "c"]
        assert store.purge() == 1
    code, output = doctor(app)
    assert code == 0, output
    assert f"ok    permissions  this role has every privilege chatledger uses " \
           f"({CHECKED} checked)" in output
    with psycopg.connect(app) as connection, pytest.raises(psycopg.errors.InsufficientPrivilege):
        connection.execute("CREATE TABLE chatledger.mine (x int)")

    with open_store(app, namespace="bot") as store:  # the library's doctor, grant by grant
        for table, privilege in PRIVILEGES:
            if table == "item_vectors":  # no pgvector here: test_role_vectors
                continue
            run(owner, f"REVOKE {privilege} ON chatledger.{table} FROM chatledger_app")
            found = {check.name: check for check in store._backend.checks()}
            run(owner, f"GRANT {privilege} ON chatledger.{table} TO chatledger_app")
            if table == "schema_version":  # the schema's version is read first: no further
                assert "permission denied for table schema_version" in found["server"].detail
                continue
            missing = f"{privilege} ON chatledger.{table}"
            assert (found["permissions"].status, found["permissions"].value) == (
                "fail", [missing]), (table, privilege)

    _execute_is_named(owner, app)
    run(owner, "REVOKE UPDATE ON chatledger.entries FROM chatledger_app")
    code, output = doctor(app)
    assert code == 1
    assert ("FAIL  permissions  this role lacks UPDATE ON chatledger.entries: "
            "GRANT UPDATE ON chatledger.entries TO it") in output
    # Without these the store cannot be reached at all: PostgreSQL's words say which.
    run(owner, "REVOKE SELECT ON chatledger.sessions FROM chatledger_app")
    code, output = doctor(app)
    assert code == 2 and "permission denied for table sessions" in output
    run(owner, "REVOKE USAGE ON SCHEMA chatledger FROM chatledger_app")
    code, output = doctor(app)
    assert code == 2 and "permission denied for schema chatledger" in output


def _execute_is_named(owner: str, app: str) -> None:
    """A database that revokes functions from PUBLIC: the documented grant still
    holds; without it doctor names it."""
    run(owner, "REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA chatledger FROM PUBLIC")
    with open_store(app, namespace="bot") as store:
        store.session("e").append([user("x")])
    run(owner, "REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA chatledger FROM chatledger_app")
    code, output = doctor(app)
    assert code == 1
    assert ("FAIL  permissions  this role lacks EXECUTE ON ALL FUNCTIONS IN SCHEMA chatledger:"
            " GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA chatledger TO it") in output
    run(owner, "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA chatledger TO chatledger_app")


def test_a_role_without_usage_on_the_schema_is_told_that_first() -> None:
    from chatledger._backends.postgres.checks import permission_check

    check = permission_check('"Odd"', False, [])
    assert (check.status, check.value) == ("fail", ['USAGE ON SCHEMA "Odd"'])
    assert check.detail.endswith('GRANT USAGE ON SCHEMA "Odd" TO it')
