"""Where a ``dynamodb://`` ledger's items are and what they hold; no I/O.

One table holds every namespace. A session is one partition (``pk``), its
items told apart by the sort key ``sk``:

=================  =========================================  ==========================
``sk``             item                                       attributes
=================  =========================================  ==========================
``m``              the session's meta item: its state         ``ver first created
                                                              updated exp ledger``,
                                                              ``uid`` (a tagged session),
                                                              once committed ``ns sid``
``e`` + seq (20)   one message's stored entry                 ``b ledger tok mid`` and
                                                              ``parts`` when it is split
``p`` tok/seq/k    part k of an entry over the item limit     ``b ledger tok``
``i`` + sha256     where a message id is stored               ``mid seq bf bl ledger tok``
=================  =========================================  ==========================

The user index has a partition per user of a namespace (``u`` + namespace
+ user, which no session's partition key starts with): an item per session
tagged with the user, its sort key the session id, no other attribute. It is
written in the transaction that creates the tagged session (a large append's:
the one that puts its placeholder meta item, before any message), so a tagged
session, even one still being written, is never unindexed; ``user_sessions`` is
one ``Query`` of that partition.

``exp`` (epoch seconds) is the table's TTL attribute: DynamoDB deletes an
expired meta item, eventually; readers treat it as gone from the second it
expires. The sparse index ``sessions`` (partition ``ns``, sort ``sid``,
projecting ``exp``) lists the committed sessions of a namespace in id order,
without a Scan. A meta item also holds ``lease``/``lease_until`` while a
large append writes its items (see :mod:`.leases`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from ..contract import PAGE as CONTRACT_PAGE
from ..contract import RawInfo

__all__ = [
    "INDEX",
    "META",
    "PAGE",
    "TTL_ATTRIBUTE",
    "USER",
    "Meta",
    "entry_key",
    "id_key",
    "meta_from_item",
    "number",
    "part_key",
    "partition",
    "seq_of",
    "user_partition",
]

META = "m"
INDEX = "sessions"
# Session ids a page of sessions() holds: the contract's, read at each call (tests shrink it).
PAGE = CONTRACT_PAGE
TTL_ATTRIBUTE = "exp"
USER = "uid"  # the meta item's user (``user`` is one of DynamoDB's reserved words)
_SEQ_DIGITS = 20


def partition(namespace: str, session: str) -> str:
    """The session's partition key: the namespace's length keeps the split unambiguous."""
    return f"{len(namespace)}/{namespace}/{session}"


def user_partition(namespace: str, user: str) -> str:
    """The user index's partition of ``user``: ``u`` first, as a session's partition
    key starts with a digit."""
    return f"u{len(namespace)}/{namespace}/{user}"


def entry_key(seq: int) -> str:
    return f"e{seq:0{_SEQ_DIGITS}d}"


def seq_of(sort_key: str) -> int:
    return int(sort_key[1:])


def part_key(tok: str, seq: int, part: int) -> str:
    return f"p{tok}/{seq}/{part}"


def id_key(message_id: bytes) -> str:
    """An id's sort key: a digest, as an id may be longer than a key or not valid UTF-8."""
    return "i" + hashlib.sha256(message_id).hexdigest()


@dataclass(frozen=True)
class Meta:
    """A meta item as read: the state, and the lease of a large append if one is held."""

    info: RawInfo
    lease: str | None = None
    lease_until: float = 0.0
    committed: bool = True  # False: a placeholder made by a large append not yet committed


def meta_from_item(item: dict[str, Any]) -> Meta:
    exp = item.get(TTL_ATTRIBUTE)
    info = RawInfo(
        version=int(item["ver"]["N"]),
        first_seq=int(item["first"]["N"]),
        created_at=float(item["created"]["N"]),
        updated_at=float(item["updated"]["N"]),
        expires_at=None if exp is None else float(exp["N"]),
        ledger=item["ledger"]["S"],
        user=item[USER]["S"] if USER in item else None,
    )
    lease = item.get("lease")
    return Meta(info, None if lease is None else lease["S"],
                float(item["lease_until"]["N"]) if lease is not None else 0.0,
                committed="sid" in item)


def number(value: float) -> dict[str, str]:
    """A number attribute that reads back as exactly the same float."""
    return {"N": repr(float(value)) if not float(value).is_integer() else str(int(value))}
