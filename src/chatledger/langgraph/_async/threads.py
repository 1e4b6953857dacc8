"""A thread's index: its namespaces, and the sweeps that keep them alive together.

The source of ``_sync/threads.py``. One session per thread (``layout.py``),
appended when a namespace gets its first checkpoint and when a put sweeps the
thread (``expiry.py``); the newest entry says when the thread was last swept.
"""

from __future__ import annotations

import secrets

from ..._async.store import AsyncStore
from .._entries import KeepAlive, NamespaceEntry, decode, encode
from .._layout import index_session_id, namespace_message_id, session_id
from .ledger import MAX_PAGE

__all__ = ["AsyncThreadIndex"]


class AsyncThreadIndex:
    """The index session of one thread."""

    def __init__(self, store: AsyncStore, thread_id: str, user: str | None = None) -> None:
        self.store = store
        self.thread_id = thread_id
        self.session = store.session(index_session_id(thread_id), user=user)

    async def last_sweep(self) -> float | None:
        """When the thread was last swept, as its newest index entry says (None: never)."""
        history = await self.session.read(last=1)
        for message in history.messages:
            entry = decode(self.session.id, message)
            if isinstance(entry, KeepAlive):
                return entry.at
            if isinstance(entry, NamespaceEntry):
                return entry.swept
        return None

    async def register(self, checkpoint_ns: str, swept: float | None) -> None:
        """List ``checkpoint_ns`` (once; a namespace listed already stays as it is)."""
        entry = NamespaceEntry(checkpoint_ns, swept)
        await self.session.append([encode(entry, namespace_message_id(checkpoint_ns))])

    async def namespaces(self) -> list[str]:
        names: list[str] = []
        after = 0
        while True:
            page = await self.session.read(after=after, limit=MAX_PAGE)
            if not page.messages:
                return names
            entries = (decode(self.session.id, m) for m in page.messages)
            names += [e.checkpoint_ns for e in entries if isinstance(e, NamespaceEntry)]
            after = page.messages[-1].seq or 0

    async def sweep(self, checkpoint_ns: str, now: float) -> None:
        """Keep every namespace alive from ``now``: one keep-alive appended to each
        but ``checkpoint_ns`` (whose put is about to record the sweep), then the index."""
        await self.register(checkpoint_ns, now)
        # Not uuid.uuid4: graphs (and LangGraph's own tests) patch it to hand out
        # predictable ids, and a sweep taking one would shift theirs.
        alive = encode(KeepAlive(now), f"k/{secrets.token_hex(16)}")
        for ns in await self.namespaces():
            if ns != checkpoint_ns:
                namespace = self.store.session(session_id(self.thread_id, ns),
                                               user=self.session.user)
                await namespace.append([alive])
        await self.session.append([alive])
