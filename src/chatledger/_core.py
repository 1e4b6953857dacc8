"""The store's logic that does no I/O, shared by the sync and async stores and
by every backend: planning an operation and interpreting its result."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timezone

from .backends.base import Batch, RawHistory, RawInfo, ReadQuery
from .codec import decode
from .errors import ConflictError, InvalidMessage, MemoryLostError
from .messages import Message
from .results import Ack, History, SessionInfo
from .validation import encode_batch

StoredId = tuple[int, int, int]
"""Where a stored message id is: (seq, first seq of its batch, last seq of its batch)."""

__all__ = [
    "StoredId",
    "check_count",
    "check_expected_version",
    "check_min_version",
    "dedupe",
    "make_batch",
    "make_query",
    "prefix_upper_bound",
    "to_history",
    "to_info",
]


def make_batch(
    messages: Sequence[Message], expect_version: int | None, max_message_bytes: int
) -> Batch:
    """Validate and encode an append; raises InvalidMessage before any I/O."""
    if expect_version is not None:
        check_count(expect_version, "expect_version")
    blobs = encode_batch(messages, max_message_bytes)
    return Batch(ids=[m.id for m in messages], blobs=blobs, expect_version=expect_version)


def dedupe(ids: Sequence[str], found: Mapping[str, StoredId]) -> Ack | None:
    """Decide an append whose ids may already be stored.

    ``found`` maps each stored id of the batch to ``(seq, batch_first,
    batch_last)``: where it is, and the seqs of the batch it came in. None: no
    id is stored, go ahead. An Ack: the batch is exactly one stored batch, in
    order, so this is a retry of it. Anything else (new ids beside stored ones,
    part of a batch, another order) is no retry: it is refused whole.
    """
    if not found:
        return None
    for index, message_id in enumerate(ids):
        if message_id not in found:
            stored = next(i for i, m in enumerate(ids) if m in found)
            raise InvalidMessage(
                f"messages[{stored}].id",
                f"{ids[stored]!r} is already stored (seq {found[ids[stored]][0]}) but "
                f"messages[{index}] is new: retry a batch whole, never partly",
            )
    seqs = [found[m][0] for m in ids]
    _, first, last = found[ids[0]]
    if seqs != list(range(first, last + 1)):
        raise InvalidMessage(
            "messages",
            f"these ids are stored at seqs {seqs}, not as the whole batch {first}..{last} "
            "in this order",
        )
    return Ack(first_seq=first, last_seq=last, version=last, deduplicated=True)


def check_expected_version(session: str, expect_version: int | None, version: int) -> None:
    """Raise ConflictError unless ``expect_version`` is None or equals ``version``."""
    if expect_version is not None and expect_version != version:
        raise ConflictError(session, expect_version, version)


def make_query(last: int | None, after: int | None, limit: int | None) -> ReadQuery:
    """Check the arguments of ``read`` and build the query."""
    if last is not None and (after is not None or limit is not None):
        raise ValueError("read() takes either last=N, or after=SEQ and/or limit=N, not both")
    for value, name in ((last, "last"), (after, "after"), (limit, "limit")):
        if value is not None:
            check_count(value, name)
    return ReadQuery(last=_bounded(last), after=_bounded(after) or 0, limit=_bounded(limit))


# Windows beyond any ledger's length mean "all of it": capping them keeps every
# backend's arithmetic exact (SQLite integers, Lua's doubles).
_WINDOW_CAP = 2**53 - 1


def _bounded(value: int | None) -> int | None:
    return None if value is None else min(value, _WINDOW_CAP)


def check_min_version(min_version: int | None) -> int:
    """``min_version`` as a count (0 when not given)."""
    if min_version is None:
        return 0
    check_count(min_version, "min_version")
    return min_version


def to_history(session: str, raw: RawHistory, min_version: int) -> History:
    """Decode a read, after checking that no acknowledged history was lost."""
    if raw.version < min_version:
        raise MemoryLostError(session, min_version, raw.version)
    messages = [decode(session, seq, blob) for seq, blob in raw.entries]
    return History(messages=messages, version=raw.version, first_seq=raw.first_seq)


def to_info(raw: RawInfo | None) -> SessionInfo | None:
    """The public form of a session's state."""
    if raw is None:
        return None
    return SessionInfo(
        version=raw.version,
        count=raw.version - raw.first_seq + 1,
        first_seq=raw.first_seq,
        created_at=_datetime(raw.created_at),
        updated_at=_datetime(raw.updated_at),
        expires_at=None if raw.expires_at is None else _datetime(raw.expires_at),
    )


def prefix_upper_bound(prefix: str) -> str | None:
    """The least string above every string that starts with ``prefix``.

    With it, "starts with" becomes a range query on an ordered index, so a
    prefix is compared as data and never interpreted as a pattern.
    """
    stripped = prefix.rstrip(chr(0x10FFFF))
    if not stripped:
        return None
    after = ord(stripped[-1]) + 1
    if 0xD800 <= after <= 0xDFFF:  # surrogates are not text; jump over them
        after = 0xE000
    return stripped[:-1] + chr(after)


def check_count(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be 0 or more, got {value}")


def _datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)
