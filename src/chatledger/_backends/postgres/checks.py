"""What ``chatledger doctor`` says about a PostgreSQL server; no I/O.

An acknowledged append is durable when the server flushes its WAL before it
answers (``fsync``, ``synchronous_commit``), writes whole pages after a crash
(``full_page_writes``) and, to survive the loss of the machine, waits for a
synchronous standby (``synchronous_standby_names``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._checks import Check

__all__ = ["CHECKED", "PRIVILEGES", "findings", "permission_check", "unreachable"]


def findings(settings: Sequence[Any], schema: int, current: int,
             round_trip: float) -> list[Check]:
    """The checks from the server's settings, the schema version (``current``: this
    chatledger's) and a round trip."""
    version, fsync, commit, full_pages, standbys, recovery, replicas = settings
    return [
        Check("server", "info", f"PostgreSQL {version}", version),
        Check("fsync", "ok" if fsync == "on" else "fail",
              f"fsync={fsync}" + ("" if fsync == "on" else
                                  ": a crash can lose or corrupt acknowledged appends"), fsync),
        Check("synchronous_commit", "warn" if commit == "off" else "ok",
              f"synchronous_commit={commit}" + (
                  ": a crash can lose the last acknowledged appends" if commit == "off" else ""),
              commit),
        Check("full_page_writes", "ok" if full_pages == "on" else "warn",
              f"full_page_writes={full_pages}", full_pages),
        _replication(standbys, int(replicas), bool(recovery)),
        Check("schema", "ok" if schema == current else "fail",
              f"schema version {schema} (this chatledger: {current})"
              + ("" if schema == current else "; run chatledger migrate-schema URL"),
              schema),
        Check("latency", "info", f"one query in {round_trip * 1000:.2f} ms", round_trip),
    ]


PRIVILEGES: tuple[tuple[str, str], ...] = (
    *(("schema_version", "SELECT"),),
    *((table, privilege) for table in ("sessions", "entries")
      for privilege in ("SELECT", "INSERT", "UPDATE", "DELETE")),
    *(("message_ids", privilege) for privilege in ("SELECT", "INSERT", "DELETE")),
    *(("item_vectors", privilege) for privilege in ("SELECT", "INSERT", "DELETE")),
)
"""What chatledger's role needs on each table of its schema (and USAGE on the
schema, EXECUTE on its function ``append``): the grants of the Security page.
UPDATE on entries is for rotate-key; ``item_vectors`` counts only where it
exists (LedgerStore on pgvector: a put replaces the older version's rows)."""

CHECKED = len(PRIVILEGES) + 2
"""How many privileges doctor checks: the tables', USAGE and EXECUTE."""


def permission_check(schema: str, usage: bool, granted: Sequence[bool],
                     execute: bool = True) -> Check:
    """The finding: USAGE on ``schema``, ``granted[i]`` for ``PRIVILEGES[i]``, and
    ``execute``: EXECUTE on the schema's function ``append`` (every append calls it)."""
    missing = [] if usage else [f"USAGE ON SCHEMA {schema}"]
    missing += [f"{privilege} ON {schema}.{table}"
                for (table, privilege), ok in zip(PRIVILEGES, granted, strict=False) if not ok]
    if not execute:
        missing.append(f"EXECUTE ON ALL FUNCTIONS IN SCHEMA {schema}")
    if not missing:
        return Check("permissions", "ok", f"this role has every privilege chatledger uses "
                     f"({CHECKED} checked)")
    return Check("permissions", "fail", "this role lacks " + ", ".join(missing)
                 + ": GRANT " + "; GRANT ".join(missing) + " TO it", missing)


def unreachable(where: str, exc: BaseException) -> Check:
    return Check("server", "fail", f"{where}: {exc}")


def _replication(standbys: str, replicas: int, recovery: bool) -> Check:
    if recovery:
        return Check("replication", "fail", "the server is a standby: it refuses writes",
                     "standby")
    if standbys:
        return Check("replication", "ok", f"{replicas} replica(s) connected; commits wait for "
                     f"synchronous_standby_names={standbys!r}", replicas)
    return Check("replication", "info" if replicas else "warn",
                 f"{replicas} replica(s) connected, none synchronous: acknowledged appends "
                 "live on this server only until a replica has them", replicas)
