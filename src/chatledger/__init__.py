"""chatledger: conversation memory for LLM agents that does not forget.

Each session is an append-only, versioned ledger of messages with atomic
batches, idempotent appends, optimistic concurrency and loss detection.
"""

from __future__ import annotations

from ._async.store import AsyncSession, AsyncStore, open_async_store
from ._context import approximate_tokens, summary_through
from ._crypto import Keyring
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
from ._messages import Message, ToolCall, assistant, system, tool, user
from ._options import RetryPolicy, StoreOptions
from ._results import Ack, ForgetReport, History, RotationReport, SessionInfo
from ._sync.store import Session, Store, open_store
from ._version import __version__ as __version__

__all__ = [
    "Ack",
    "AsyncSession",
    "AsyncStore",
    "BackendError",
    "BackendUnavailable",
    "ChatLedgerError",
    "ConfigError",
    "ConflictError",
    "CorruptEntryError",
    "EncryptionKeyError",
    "ForgetReport",
    "History",
    "InvalidMessage",
    "Keyring",
    "MemoryLostError",
    "Message",
    "RetryPolicy",
    "RotationReport",
    "Session",
    "SessionInfo",
    "SessionUserError",
    "Store",
    "StoreOptions",
    "ToolCall",
    "approximate_tokens",
    "assistant",
    "open_async_store",
    "open_store",
    "summary_through",
    "system",
    "tool",
    "user",
]
