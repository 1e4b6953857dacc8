"""chatledger's errors: one tree under :class:`ChatLedgerError`, each also exported
from ``chatledger``.

Catch :class:`ChatLedgerError` for anything the library raises on purpose;
:class:`BackendUnavailable` is the one worth retrying later; :class:`MemoryLostError`
means history that was stored is gone (never an empty answer).
"""

from ._errors import (
    BackendError,
    BackendUnavailable,
    ChatLedgerError,
    ConfigError,
    ConflictError,
    CorruptEntryError,
    EncryptionKeyError,
    InvalidMessage,
    MemoryLostError,
    SessionUserError,
)

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
