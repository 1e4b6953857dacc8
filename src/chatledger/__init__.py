"""chatledger: conversation memory for LLM agents that does not forget.

Each session is an append-only, versioned ledger of messages with atomic
batches, idempotent appends, optimistic concurrency and loss detection.
"""

from __future__ import annotations

from ._context import approximate_tokens, summary_through
from .aio import AsyncSession, AsyncStore, open_async_store
from .errors import (
    BackendError,
    BackendUnavailable,
    ChatLedgerError,
    ConfigError,
    ConflictError,
    CorruptEntryError,
    InvalidMessage,
    MemoryLostError,
)
from .messages import Message, ToolCall, assistant, system, tool, user
from .options import RetryPolicy, StoreOptions
from .results import Ack, History, SessionInfo
from .store import Session, Store, open_store

__version__ = "0.1.0"

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
    "History",
    "InvalidMessage",
    "MemoryLostError",
    "Message",
    "RetryPolicy",
    "Session",
    "SessionInfo",
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
