"""What a cancelled transaction says, and the condition that a meta item is as read; no I/O.

Every write of a ledger is conditioned on its meta item, the first item of its
transaction. A transaction cancelled by a failed condition is a plain value,
:class:`Refused`, which the caller reads: the meta item changed (another writer
won: read again), or an id item's condition failed (some of the batch's ids are
stored: a retry's Ack answers it). Other cancellations are errors in our terms.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from ..._errors import BackendError, BackendUnavailable
from .io import RETRIABLE_REASONS
from .layout import TTL_ATTRIBUTE, Meta, meta_from_item, number

__all__ = ["UNREAD", "Refused", "Seen", "Unread", "refused", "unchanged_or_absent"]


class Unread(enum.Enum):
    """A meta item not read, or not returned: read it before relying on it."""

    UNREAD = "unread"


UNREAD = Unread.UNREAD
Seen: TypeAlias = "Meta | Literal[Unread.UNREAD] | None"
"""A session's meta item as last seen: the item, None (there is none) or UNREAD."""


@dataclass(frozen=True)
class Refused:
    """A transaction a failed condition cancelled: none of it was written."""

    ids_stored: bool  # an id item's condition failed, not the meta item's (the first)
    meta: Seen = UNREAD  # when the meta item's failed: the item now, if DynamoDB returned it


def refused(reasons: list[dict[str, Any]], where: str) -> Refused:
    """Why a transaction was cancelled: which condition failed. A retriable reason
    is BackendUnavailable; a reason that is no condition, BackendError."""
    codes = [str(reason.get("Code", "None")) for reason in reasons]
    if any(code in RETRIABLE_REASONS for code in codes):
        raise BackendUnavailable(f"dynamodb {where}: transaction cancelled "
                                 f"({', '.join(sorted(set(codes) & RETRIABLE_REASONS))})")
    failed = [i for i, code in enumerate(codes) if code == "ConditionalCheckFailed"]
    if not failed:
        raise BackendError(f"dynamodb {where}: transaction cancelled: {', '.join(codes)}")
    if failed[0]:
        return Refused(ids_stored=True)
    item = reasons[0].get("Item")
    return Refused(ids_stored=False, meta=meta_from_item(item) if item else UNREAD)


def unchanged_or_absent(meta: Meta | None, now: float | None = None) -> dict[str, Any]:
    """The condition that the meta item is still the one read (or still missing).

    ``now``: the item is replaced because it expired; it must still be expired.
    """
    if meta is None:
        return {"ConditionExpression": "attribute_not_exists(pk)"}
    condition = "ledger = :old AND ver = :oldv AND " + (
        "lease = :oldlease" if meta.lease else "attribute_not_exists(lease)")
    values = {":old": {"S": meta.info.ledger}, ":oldv": number(meta.info.version),
              **({":oldlease": {"S": meta.lease}} if meta.lease else {})}
    if now is not None and meta.committed and meta.info.expires_at is not None:
        condition += f" AND {TTL_ATTRIBUTE} <= :now"
        values[":now"] = number(now)
    return {"ConditionExpression": condition, "ExpressionAttributeValues": values}
