"""The one exception tree of chatledger.

::

    ChatLedgerError
    ├── ConfigError            bad URL, missing driver (names the pip extra), bad option
    ├── InvalidMessage         rejected at append; says which field and why
    ├── ConflictError          expect_version mismatch; .expected, .current
    ├── MemoryLostError        min_version or ledger not met; .expected, .found, .ledger
    ├── SessionUserError       an append names a user the session was not tagged with
    ├── CorruptEntryError      stored entry undecodable; .session, .seq
    │   └── EncryptionKeyError encrypted with a key the store lacks, or a wrong one; .key_id
    └── BackendError           the backend failed; wraps the driver's exception
        └── BackendUnavailable down, hung, failing over, refusing writes; retriable

Backends raise ``BackendError``/``BackendUnavailable`` *from* the driver's
exception, so ``__cause__`` always holds the original.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BackendError",
    "BackendUnavailable",
    "ChatLedgerError",
    "ConfigError",
    "ConflictError",
    "CorruptEntryError",
    "EncryptionKeyError",
    "InvalidMessage",
    "MemoryLostError",
    "SessionUserError",
]


class ChatLedgerError(Exception):
    """Base of every error chatledger raises on purpose.

    Its instances pickle with their message and attributes, so an error raised
    in a worker process (multiprocessing, concurrent.futures) reaches the parent
    as itself.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        # Exception's own __reduce__ rebuilds with cls(*self.args), but the
        # subclasses take their parts (session, expected, ...), not the message:
        # rebuild without __init__, from the message and the attributes as they are.
        return _rebuilt, (type(self), self.args), self.__dict__


def _rebuilt(cls: type[ChatLedgerError], args: tuple[Any, ...]) -> ChatLedgerError:
    """An unpickled error: its message set, its attributes restored next by pickle."""
    return cls.__new__(cls, *args)


class ConfigError(ChatLedgerError):
    """A bad URL, an unknown option, or a driver that is not installed."""


class InvalidMessage(ChatLedgerError):
    """A message was rejected at ``append``; nothing of its batch was written.

    ``field`` is the path of the offending value, e.g. ``messages[1].metadata.when``.
    """

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class ConflictError(ChatLedgerError):
    """``expect_version`` did not match the session's current version."""

    def __init__(self, session: str, expected: int, current: int) -> None:
        super().__init__(
            f"session {session!r} is at version {current}, not the expected {expected}"
        )
        self.session = session
        self.expected = expected
        self.current = current


class MemoryLostError(ChatLedgerError):
    """The store holds less than the caller knows: history was lost.

    Either the session's version is below ``expected``, or the caller named the
    ledger it knew (``ledger``) and the session now has another one
    (``found_ledger``; None when the session does not exist): it was deleted,
    expired or lost and then written again.
    """

    def __init__(self, session: str, expected: int, found: int, *,
                 ledger: str | None = None, found_ledger: str | None = None) -> None:
        super().__init__(_lost_message(session, expected, found, ledger, found_ledger))
        self.session = session
        self.expected = expected
        self.found = found
        self.ledger = ledger
        self.found_ledger = found_ledger


def _lost_message(session: str, expected: int, found: int, ledger: str | None,
                  found_ledger: str | None) -> str:
    causes = "it was evicted, expired, deleted or the server restarted empty"
    if ledger is not None and found_ledger != ledger:
        now = ("no longer exists" if found_ledger is None
               else f"is a new ledger {found_ledger!r} at version {found}")
        return (f"session {session!r}: ledger {ledger!r} is gone and the session {now}; "
                f"{causes}")
    return (f"session {session!r} should be at version {expected} or later but the store "
            f"holds version {found}: {causes}")


class SessionUserError(ChatLedgerError):
    """An append names a user other than the one its session was tagged with.

    A session's user is set by its first append and never changes, so that
    ``forget_user`` finds every session of a user and no other: nothing is
    stored. ``owner`` is None when the session was created without a user.
    """

    def __init__(self, session: str, user: str, owner: str | None) -> None:
        self.session, self.user, self.owner = session, user, owner
        tagged = ("was created without a user" if owner is None
                  else f"belongs to user {owner!r}")
        super().__init__(f"session {session!r} {tagged}, not {user!r}: a session's user is "
                         "set by its first append and never changes; nothing was stored")


class CorruptEntryError(ChatLedgerError):
    """A stored entry cannot be decoded, or is missing from the window read (a gap
    between the session's first seq and its version). Other entries stay readable
    around it."""

    def __init__(self, session: str, seq: int, reason: str) -> None:
        super().__init__(f"session {session!r}: entry seq={seq} cannot be decoded: {reason}")
        self.session = session
        self.seq = seq
        self.reason = reason


class EncryptionKeyError(CorruptEntryError):
    """An encrypted entry this store cannot open: its key id is not in the
    store's keyring (or the store has none), or the key under that id is not the
    one it was sealed with, or the entry was altered. Names the key id, never
    the key; other entries stay readable around it."""

    def __init__(self, session: str, seq: int, reason: str, key_id: str = "") -> None:
        super().__init__(session, seq, reason)
        self.key_id = key_id


class BackendError(ChatLedgerError):
    """The backend failed in a way that retrying will not fix."""


class BackendUnavailable(BackendError):
    """The backend is down, hung, failing over or refusing writes; retriable.

    An append that ends in this error may or may not have been applied; retrying
    it with the same message ids is always safe.
    """
