"""What ``chatledger doctor`` says about a DynamoDB table.

The table must be ACTIVE with chatledger's key schema (``pk``/``sk`` and the
``sessions`` index); its TTL must be enabled on ``exp`` or expired sessions
are never deleted (only hidden); on-demand billing never throttles a burst the
way a small provisioned capacity does; point-in-time recovery is what brings
back a table deleted or overwritten by mistake.
"""

from __future__ import annotations

from typing import Any

from ..._checks import Check
from .layout import INDEX, TTL_ATTRIBUTE

__all__ = ["round_trip", "table_checks", "unreachable"]

_KEYS = [("pk", "HASH"), ("sk", "RANGE")]


def table_checks(described: dict[str, Any], ttl: dict[str, Any],
                 backups: dict[str, Any]) -> list[Check]:
    """What DescribeTable, DescribeTimeToLive and DescribeContinuousBackups said."""
    return [_status(described), _schema(described), _ttl(ttl), _billing(described),
            _pitr(backups)]


def round_trip(elapsed: float | Exception) -> Check:
    """How long a GetItem of a meta item took, or why it failed."""
    if isinstance(elapsed, Exception):
        return Check("round trip", "fail", f"a GetItem of chatledger's keys failed: {elapsed}")
    return Check("latency", "info", f"one GetItem in {elapsed * 1000:.2f} ms", elapsed)


def unreachable(where: str, exc: Exception) -> Check:
    """The one check of a table that could not be described (missing, no access, down)."""
    return Check("table", "fail", f"{where}: {exc}")


def _status(described: dict[str, Any]) -> Check:
    status = described.get("TableStatus", "?")
    return Check("table", "ok" if status == "ACTIVE" else "fail",
                 f"table {described.get('TableName')} is {status}", status)


def _schema(described: dict[str, Any]) -> Check:
    keys = [(k["AttributeName"], k["KeyType"]) for k in described.get("KeySchema", [])]
    indexes = {i["IndexName"] for i in described.get("GlobalSecondaryIndexes", [])}
    if keys == _KEYS and INDEX in indexes:
        return Check("key schema", "ok", f"pk (HASH), sk (RANGE), index {INDEX!r}", keys)
    named = ", ".join(f"{name} ({kind})" for name, kind in keys) or "none"
    listed = ", ".join(repr(index) for index in sorted(indexes)) or "none"
    return Check("key schema", "fail", f"keys {named}, indexes {listed}: not chatledger's "
                 f"table (pk (HASH), sk (RANGE), index {INDEX!r}); create one with "
                 "`chatledger create-table URL`", keys)


def _ttl(ttl: dict[str, Any]) -> Check:
    status = ttl.get("TimeToLiveStatus", "DISABLED")
    attribute = ttl.get("AttributeName")
    if status in ("ENABLED", "ENABLING") and attribute == TTL_ATTRIBUTE:
        return Check("ttl", "ok", f"TTL {status.lower()} on {TTL_ATTRIBUTE!r}", status)
    return Check("ttl", "warn", f"TTL is {status.lower()} (attribute {attribute!r}): expired "
                 f"sessions are hidden but never deleted; enable TTL on {TTL_ATTRIBUTE!r}",
                 status)


def _billing(described: dict[str, Any]) -> Check:
    mode = described.get("BillingModeSummary", {}).get("BillingMode", "PROVISIONED")
    if mode == "PAY_PER_REQUEST":
        return Check("billing", "ok", "on-demand (PAY_PER_REQUEST)", mode)
    throughput = described.get("ProvisionedThroughput", {})
    return Check("billing", "info", f"provisioned: {throughput.get('ReadCapacityUnits')} RCU, "
                 f"{throughput.get('WriteCapacityUnits')} WCU; a burst over them is throttled "
                 "(retried by the store within its deadline)", mode)


def _pitr(backups: dict[str, Any]) -> Check:
    status = backups.get("PointInTimeRecoveryDescription", {}).get(
        "PointInTimeRecoveryStatus", "DISABLED")
    if status == "ENABLED":
        return Check("point-in-time recovery", "ok", "enabled", status)
    return Check("point-in-time recovery", "warn", "disabled: a table deleted or overwritten "
                 "by mistake cannot be restored", status)
