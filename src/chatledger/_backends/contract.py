"""The backend contract's records and rules, in one place.

A backend moves bytes; these are the values it takes and returns, and the
ledger rules every backend applies the same way: what an append does
(:func:`plan_append`: its checks in their order, from :func:`check_ledger`,
:func:`check_user`, :func:`dedupe` and :func:`check_expected_version`, and
the state it leaves), where a trim cuts (:func:`trim_cut`), how a prefix
becomes a range (:func:`prefix_upper_bound`), where the next group of
``group_heads`` starts (:func:`next_group`) and how long a page of session
ids is (:data:`PAGE`). Nothing here does I/O: a backend reads what the plan
needs, asks it, and writes what it says (the Redis ``APPEND`` script says the
same on the server; tests/contract/test_plan.py holds both to one table).

Ledger identity. A session id can outlive its ledger: deleted, expired,
evicted, or lost in a restart, then written again. Each ledger therefore gets
an id when it is created (:func:`new_ledger_id`), stored beside its version and
returned with every result, so a caller who saw ledger L at version v can tell
"L grew past v" from "a new ledger grew past v".
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .._errors import (
    ConfigError,
    ConflictError,
    InvalidMessage,
    MemoryLostError,
    SessionUserError,
)
from .._filled import set_at_once
from .._results import Ack

__all__ = [
    "EMPTY",
    "PAGE",
    "Batch",
    "Growth",
    "Head",
    "HeadPage",
    "NoStoreHere",
    "RawHistory",
    "RawInfo",
    "ReadQuery",
    "Reseal",
    "SessionPage",
    "StoredId",
    "check_expected_version",
    "check_ledger",
    "check_user",
    "dedupe",
    "first_of_groups",
    "new_ledger_id",
    "next_group",
    "plan_append",
    "prefix_upper_bound",
    "trim_cut",
]

PAGE = 500
"""Session ids per page of ``list_sessions``."""


class NoStoreHere(ConfigError):
    """A file opened with ``create=false`` holds no chatledger store (SQLite): the
    command line words it for commands that added the option themselves."""

StoredId = tuple[int, int, int]
"""Where a stored message id is: (seq, first seq of its batch, last seq of its batch)."""


Reseal = tuple[int, bytes, bytes]
"""An entry to re-encrypt in place: (seq, the bytes it must still hold, its new bytes)."""


def new_ledger_id() -> str:
    """A fresh ledger id: 64 random bits, so a recreated ledger never repeats one."""
    return os.urandom(8).hex()  # secrets.token_hex(8), without its three calls


@set_at_once  # every append builds one
@dataclass(frozen=True)
class Batch:
    """An encoded, validated append: ``blobs[i]`` is the message with ``ids[i]``.

    ``ledger``: the ledger the append must land on (None: whatever ledger the
    session has, or a new one). A session with another ledger, or none, refuses
    it with MemoryLostError and keeps nothing of it. ``strict``: the ledger is
    checked before the ids (the caller named it); otherwise (a retry pinned by
    the store) a batch already stored whole is its own retry, on any ledger:
    the attempt that stored it was not pinned, so it did nothing wrong.
    ``user``: the user the session belongs to (:func:`check_user`); a new
    session is tagged with it and indexed under it. ``new_ledger``: the id of
    the ledger this append creates, if it creates one (None: a fresh
    :func:`new_ledger_id`); an encrypting store names it, having sealed the
    entries for it.
    """

    ids: list[str]
    blobs: list[bytes]
    expect_version: int | None = None
    ledger: str | None = None
    strict: bool = True
    user: str | None = None
    new_ledger: str | None = None


@dataclass(frozen=True)
class ReadQuery:
    """Either the ``last`` N entries, or entries with seq > ``after``, at most ``limit``."""

    last: int | None = None
    after: int = 0
    limit: int | None = None

    def window(self, version: int, first_seq: int) -> tuple[int, int | None]:
        """The lowest seq to return and how many at most, given the session's state."""
        if self.last is not None:
            return max(first_seq, version - self.last + 1), self.last
        return max(first_seq, self.after + 1), self.limit


@dataclass(frozen=True)
class RawHistory:
    """Entries ``(seq, blob)`` in seq order, read at one consistent ``version``.

    ``ledger`` is None when the session does not exist (version 0).
    """

    entries: list[tuple[int, bytes]]
    version: int
    first_seq: int
    ledger: str | None = None


@set_at_once  # every append builds one
@dataclass(frozen=True)
class RawInfo:
    """A session's state; times are epoch seconds from the store's clock."""

    version: int
    first_seq: int
    created_at: float
    updated_at: float
    expires_at: float | None
    ledger: str
    user: str | None = None  # the user the session is tagged with (None: untagged)

    def expired(self, now: float) -> bool:
        return self.expires_at is not None and self.expires_at <= now


@dataclass(frozen=True)
class SessionPage:
    """One page of session ids, and the cursor of the next page (None: done)."""

    ids: list[str]
    cursor: str | None


Head = tuple[str, RawHistory]
"""A live session and its newest entry: ``(session id, history)``, the history
holding the entry at seq ``version`` alone, or none when every entry was trimmed."""


@dataclass(frozen=True)
class HeadPage:
    """One page of live sessions with their newest entries, in id order, and the
    cursor of the next page (None: done)."""

    heads: list[Head]
    cursor: str | None


EMPTY = RawHistory(entries=[], version=0, first_seq=1)


def dedupe(ids: Sequence[str], found: Mapping[str, StoredId], ledger: str) -> Ack | None:
    """Decide an append whose ids may already be stored in ``ledger``.

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
    return Ack(first_seq=first, last_seq=last, version=last, deduplicated=True, ledger=ledger)


def check_expected_version(session: str, expect_version: int | None, version: int) -> None:
    """Raise ConflictError unless ``expect_version`` is None or equals ``version``."""
    if expect_version is not None and expect_version != version:
        raise ConflictError(session, expect_version, version)


def check_ledger(session: str, wanted: str | None, state: RawInfo | None) -> None:
    """Raise MemoryLostError when an append aims at a ledger the session no longer has."""
    if wanted is None:
        return
    if state is None:
        raise MemoryLostError(session, 0, 0, ledger=wanted)
    if state.ledger != wanted:
        raise MemoryLostError(session, 0, state.version, ledger=wanted,
                              found_ledger=state.ledger)


def check_user(session: str, wanted: str | None, owner: str | None) -> None:
    """Raise SessionUserError when an append names a user the session does not have.

    A session's user is set by its first append and never changes: an append
    that names no user is fine on any session; one that names a user must
    name the session's own (an untagged session refuses every user).
    """
    if wanted is not None and wanted != owner:
        raise SessionUserError(session, wanted, owner)

@set_at_once  # every append builds one
@dataclass(frozen=True)
class Growth:
    """An append to write: its entries from seq ``first_seq`` on, then ``state``.

    ``created``: the append starts a ledger (there was no live session); any
    expired leftovers of the id must go first, so that it starts from nothing.
    """

    first_seq: int
    state: RawInfo
    created: bool

    @property
    def ack(self) -> Ack:
        return Ack(self.first_seq, self.state.version, self.state.version,
                   ledger=self.state.ledger)


def plan_append(session: str, batch: Batch, stored: RawInfo | None,
                found: Mapping[str, StoredId], *, now: float,
                expires: float | None) -> Ack | Growth:
    """What appending ``batch`` at ``now`` does to a session stored as ``stored``.

    ``stored``: the session's state as read (expired or not; None: none).
    ``found``: where the batch's ids are stored in it (see :func:`dedupe`);
    a backend that has not looked passes ``{}`` and asks again once it has.
    ``expires``: the expiry an append sets (the store's TTL from ``now``).

    The checks, in order: the ledger when the batch is ``strict``; on a live
    session its user, then its ids (a retry returns the original Ack, a
    partial one is refused); the ledger; the expected version. Then the
    Growth to write. Raises MemoryLostError, SessionUserError,
    InvalidMessage or ConflictError, and nothing is written.
    """
    state = None if stored is None or stored.expired(now) else stored
    # Each check called only when it has something to check (most appends name no
    # ledger and no version): every append of every backend plans here.
    if batch.strict and batch.ledger is not None:
        check_ledger(session, batch.ledger, state)
    if state is not None:
        check_user(session, batch.user, state.user)
        ack = dedupe(batch.ids, found, state.ledger)
        if ack is not None:
            return ack
    if batch.ledger is not None and not batch.strict:  # a strict one's is checked above
        check_ledger(session, batch.ledger, state)
    version = state.version if state else 0
    if batch.expect_version is not None:
        check_expected_version(session, batch.expect_version, version)
    count = len(batch.ids)
    if state is None:
        ledger = batch.new_ledger or new_ledger_id()
        return Growth(1, RawInfo(count, 1, now, now, expires, ledger, batch.user), created=True)
    # The constructors, not dataclasses.replace: every append of every backend plans here.
    grown = RawInfo(version + count, state.first_seq, state.created_at, now, expires,
                    state.ledger, state.user)
    return Growth(version + 1, grown, False)


def trim_cut(first_seq: int, version: int, keep_last: int, through_seq: int | None) -> int:
    """The oldest seq a trim keeps: the last ``keep_last`` entries, and with
    ``through_seq`` every entry above it too (never below what is kept already)."""
    cut = version - keep_last + 1
    if through_seq is not None:
        cut = min(cut, through_seq + 1)
    return max(first_seq, cut)


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


def next_group(session: str, prefix: str, separator: str) -> str:
    """The least id above every id of ``session``'s group (``group_heads``): its id
    up to and including the first ``separator`` (one ASCII character) after
    ``prefix``, or the id alone when it has none there."""
    at = session.find(separator, len(prefix))
    if at < 0:
        return session + "\x01"  # an id holds no NUL: the least id above this one
    return session[:at] + chr(ord(separator) + 1)


def first_of_groups(ids: Sequence[str], prefix: str, separator: str) -> list[str]:
    """The least id of each group (:func:`next_group`) among ``ids``, in id order."""
    return [group[0] for group in groups_of(ids, prefix, separator)]


def groups_of(ids: Sequence[str], prefix: str, separator: str) -> list[list[str]]:
    """The ids of each group (:func:`next_group`) among ``ids``, groups and ids in order."""
    groups: dict[str, list[str]] = {}
    for session in sorted(ids):
        at = session.find(separator, len(prefix))
        groups.setdefault(session if at < 0 else session[:at + 1], []).append(session)
    return list(groups.values())
