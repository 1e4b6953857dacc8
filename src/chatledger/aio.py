"""The asynchronous store: ``await open_async_store(url)`` and its sessions."""

from __future__ import annotations

from ._async.store import AsyncSession, AsyncStore, open_async_store

__all__ = ["AsyncSession", "AsyncStore", "open_async_store"]
