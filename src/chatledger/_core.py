"""The store's logic that does no I/O, shared by the sync and async stores:
checking a call's arguments, planning it for the backend and turning the
backend's answer into the public result. The ledger rules themselves live with
the backend contract (:mod:`chatledger._backends.contract`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timezone

from ._backends.contract import Batch, RawHistory, RawInfo, ReadQuery
from ._codec import decode
from ._crypto import unseal
from ._errors import CorruptEntryError, EncryptionKeyError, InvalidMessage, MemoryLostError
from ._messages import Message
from ._options import StoreOptions
from ._results import History, SessionInfo
from ._validation import check_key, encode_batch, encode_own

__all__ = [
    "check_count",
    "check_fitting",
    "check_ledger_arg",
    "check_min_version",
    "check_window",
    "decode_each",
    "entry_damage",
    "decode_entries",
    "make_batch",
    "make_own_batch",
    "make_query",
    "redacted",
    "to_history",
    "to_info",
]


def make_batch(messages: Sequence[Message], expect_version: int | None, ledger: str | None,
               max_message_bytes: int, user: str | None = None) -> Batch:
    """Validate and encode an append; raises InvalidMessage before any I/O."""
    if expect_version is not None:
        check_count(expect_version, "expect_version", most=MAX_VERSION)
    check_ledger_arg(ledger)
    blobs = encode_batch(messages, max_message_bytes)
    return Batch(ids=[m.id for m in messages], blobs=blobs, expect_version=expect_version,
                 ledger=ledger, user=user)


def make_own_batch(messages: list[Message], expect_version: int | None, ledger: str | None,
                   max_message_bytes: int, user: str | None = None) -> Batch:
    """``make_batch`` for entries chatledger built itself (``encode_own``)."""
    blobs = encode_own(messages, max_message_bytes)
    return Batch([m.id for m in messages], blobs, expect_version, ledger, True, user)


def redacted(messages: Sequence[Message],
             redact: Callable[[Message], Message] | None) -> tuple[Sequence[Message], int]:
    """The messages as the store's redaction hook makes them, and how many it changed."""
    if redact is None:
        return messages, 0
    out = [redact(m) for m in messages]
    for i, (before, after) in enumerate(zip(messages, out, strict=True)):
        if not isinstance(after, Message) or after.id != before.id:
            # The id is what makes a retried append idempotent: the hook must keep it.
            raise InvalidMessage(f"messages[{i}]", "the redact hook must return a Message "
                                 "with the same id")
    return out, sum(a != b for a, b in zip(messages, out, strict=True))


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


def check_fitting(last: int | None, after: int | None, limit: int | None,
                  max_tokens: int | None) -> None:
    """Check the arguments of a read with ``max_tokens`` or ``with_summary``."""
    if last is not None or after is not None or limit is not None:
        raise ValueError("read() with max_tokens or with_summary takes no last, after or limit")
    if max_tokens is not None:
        check_count(max_tokens, "max_tokens")


def check_min_version(min_version: int | None) -> int:
    """``min_version`` as a count (0 when not given)."""
    if min_version is None:
        return 0
    check_count(min_version, "min_version")
    return min_version


def check_ledger_arg(ledger: str | None) -> None:
    """A ledger id given by the caller: text taken from an Ack, History or SessionInfo."""
    if ledger is not None:
        check_key(ledger, "ledger")


def to_history(session: str, raw: RawHistory, min_version: int, ledger: str | None,
               options: StoreOptions, *, query: ReadQuery) -> History:
    """Decode a read (opening sealed entries with the store's keyring), after
    checking that no acknowledged history was lost, nor an entry of the window."""
    if ledger is not None and raw.ledger != ledger:
        raise MemoryLostError(session, min_version, raw.version, ledger=ledger,
                              found_ledger=raw.ledger)
    if raw.version < min_version:
        raise MemoryLostError(session, min_version, raw.version)
    check_window(session, raw, query)
    messages = decode_entries(session, raw, options)
    return History(messages=messages, version=raw.version, first_seq=raw.first_seq,
                   ledger=raw.ledger)


MISSING = ("no entry is stored at this seq, which lies between the session's first seq and "
           "its version: lost under the store")


def check_window(session: str, raw: RawHistory, query: ReadQuery) -> None:
    """Raise CorruptEntryError for the first seq of the window ``query`` asked that the
    read lacks: every seq from the session's first to its version is stored, so a
    gap is an entry lost under the store (a row deleted by hand, a damaged file), said
    as loudly as one that does not decode, never a shorter history. One comparison
    when nothing is missing: the entries come in seq order, each once."""
    missing = missing_seqs(raw, query, first_only=True)
    if missing:
        raise CorruptEntryError(session, missing[0], MISSING)


def missing_seqs(raw: RawHistory, query: ReadQuery, *, first_only: bool = False) -> list[int]:
    """The seqs of the window ``query`` asked that the read ``raw`` lacks."""
    if raw.ledger is None:
        return []
    low, count = query.window(raw.version, raw.first_seq)
    high = raw.version if count is None else min(raw.version, low + count - 1)
    entries = raw.entries
    if len(entries) == max(0, high - low + 1) and (
            not entries or (entries[0][0] == low and entries[-1][0] == high)):
        return []
    present = {seq for seq, _ in entries}
    missing = [seq for seq in range(low, high + 1) if seq not in present]
    return missing[:1] if first_only else missing


def decode_entries(session: str, raw: RawHistory, options: StoreOptions) -> list[Message]:
    """The messages of a read's entries, each opened at its place if the store encrypts."""
    keyring, namespace, ledger = options.encryption, options.namespace, raw.ledger or ""
    if keyring is None:
        # Nothing to open: decode each entry as it is, without a call to unseal per
        # entry (a read decodes its whole window). An entry that does not decode is
        # decoded again below, where unseal says why (sealed, and no keyring).
        try:
            return [decode(session, seq, blob) for seq, blob in raw.entries]
        except CorruptEntryError:
            pass
    return [decode(session, entry[0], unseal(keyring, namespace, session, ledger, entry,
                                             allow_plaintext=options.allow_plaintext))
            for entry in raw.entries]


def decode_each(session: str, raw: RawHistory, options: StoreOptions,
                query: ReadQuery) -> list[Message | CorruptEntryError]:
    """The read's entries decoded one at a time, one that does not decode, or is
    missing, as its error in its place: what a tool showing a damaged session reads
    (a read, which decodes its whole window, raises at the first)."""
    keyring, namespace, ledger = options.encryption, options.namespace, raw.ledger or ""
    decoded: list[Message | CorruptEntryError] = []
    missing = missing_seqs(raw, query)
    for seq in missing:
        decoded.append(CorruptEntryError(session, seq, MISSING))
    for entry in raw.entries:
        try:
            decoded.append(decode(session, entry[0], unseal(
                keyring, namespace, session, ledger, entry,
                allow_plaintext=options.allow_plaintext)))
        except CorruptEntryError as exc:
            decoded.append(exc)
    if missing:  # each in its place
        decoded.sort(key=lambda item: item.seq or 0)
    return decoded


def entry_damage(exc: CorruptEntryError) -> str:
    """What is wrong with a stored entry, as every tool that shows one says it (the
    reason is the one ``chatledger doctor`` gives for it)."""
    # A sealed entry is intact: the keyring lacks its key (or another key has its id).
    what = "cannot be opened" if isinstance(exc, EncryptionKeyError) else "cannot be decoded"
    return f"stored entry seq={exc.seq} {what}: {exc.reason}"


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
        ledger=raw.ledger,
        user=raw.user,
    )


MAX_VERSION = 2**63 - 1
"""The highest version a session can reach: every backend keeps it in a signed 64-bit integer."""


def check_count(value: object, name: str, *, least: int = 0, most: int | None = None) -> None:
    """``value`` is an int (not a bool) from ``least`` to ``most``, or TypeError/ValueError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < least:
        raise ValueError(f"{name} must be {'0 or more' if least == 0 else f'at least {least}'}"
                         f", got {value}")
    if most is not None and value > most:
        raise ValueError(f"{name} must be at most {most:,} (2**63 - 1, the highest version a "
                         f"session can reach), got {value:,}")


def _datetime(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)
