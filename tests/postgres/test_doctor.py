"""``chatledger doctor`` on PostgreSQL: durability settings, replication, schema, a round trip."""

from __future__ import annotations

import json

from click.testing import CliRunner

from chatledger._backends.postgres.checks import findings
from chatledger._backends.postgres.sql import SCHEMA_VERSION
from chatledger._cli import main
from chatledger._doctor import diagnose
from chatledger.testing._postgres_server import PostgresServer
from tests.postgres_fixtures import migrated


def test_a_durable_server_passes_with_a_warning_for_no_replica() -> None:
    with PostgresServer(settings={"fsync": "on", "synchronous_commit": "off"}) as server:
        url = migrated(server)
        result = CliRunner().invoke(main, ["doctor", url, "--json"])
    assert result.exit_code == 0, result.output
    checks = {c["name"]: c for c in json.loads(result.output)["checks"]}
    assert checks["server"]["detail"].startswith("PostgreSQL ")
    assert (checks["fsync"]["status"], checks["full_page_writes"]["status"]) == ("ok", "ok")
    assert checks["synchronous_commit"]["status"] == "warn"
    assert "lose the last acknowledged appends" in checks["synchronous_commit"]["detail"]
    assert checks["replication"]["status"] == "warn"
    assert (checks["schema"]["status"], checks["schema"]["value"]) == ("ok", SCHEMA_VERSION)
    assert checks["latency"]["value"] > 0
    assert checks["round trip"]["status"] == "ok"


def test_fsync_off_fails(postgres_url: str) -> None:  # the test servers run without fsync
    report = diagnose(postgres_url)
    assert report.failed
    fsync = next(check for check in report.checks if check.name == "fsync")
    assert (fsync.status, fsync.value) == ("fail", "off")


def test_a_missing_schema_fails_at_open_naming_the_command(postgres_url: str) -> None:
    report = diagnose(f"{postgres_url}?schema=not_there")
    assert report.failed and "chatledger migrate-schema URL" in report.checks[0].detail


def test_an_unreachable_server_fails() -> None:
    report = diagnose("postgresql://postgres@127.0.0.1:1/x", timeout=0.5)
    assert report.failed


def test_standbys_and_replicas_are_reported() -> None:
    def replication(standbys: str, replicas: int, recovery: bool) -> tuple[str, str]:
        settings = ("15.2", "on", "on", "on", standbys, recovery, replicas)
        check = next(c for c in findings(settings, 1, 1, 0.001) if c.name == "replication")
        return check.status, check.detail

    assert replication("", 0, recovery=True)[0] == "fail"  # a standby refuses writes
    assert replication("ANY 1 (a, b)", 2, recovery=False)[0] == "ok"
    assert replication("", 1, recovery=False)[0] == "info"
    assert "none synchronous" in replication("", 1, recovery=False)[1]
    schema = next(c for c in findings(("15.2", "on", "on", "off", "", False, 0), 0, 1, 0.001)
                  if c.name == "schema")
    assert schema.status == "fail" and "migrate-schema" in schema.detail
