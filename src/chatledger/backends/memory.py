"""``memory://``: an in-process store for unit tests and notebooks.

``memory://`` is private to one store; ``memory://NAME`` is shared by every
store of this process opened with the same name, so two "pods" of a test can
talk to one memory. Entries are kept encoded, exactly as other backends keep
them, so the codec and its failures behave the same everywhere.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from .._core import StoredId, check_expected_version, dedupe
from ..options import StoreOptions
from ..results import Ack
from ..url import StoreURL
from .base import (
    EMPTY,
    Backend,
    Batch,
    RawHistory,
    RawInfo,
    ReadQuery,
    SessionPage,
    reject_unknown_options,
)

__all__ = ["MemoryBackend"]

_PAGE = 500


@dataclass
class _Ledger:
    created_at: float
    updated_at: float
    expires_at: float | None
    version: int = 0
    first_seq: int = 1
    entries: list[bytes] = field(default_factory=list)  # entries[i] has seq first_seq + i
    ids: dict[str, StoredId] = field(default_factory=dict)

    def info(self) -> RawInfo:
        return RawInfo(self.version, self.first_seq, self.created_at, self.updated_at,
                       self.expires_at)


class _Memory:
    """The shared state behind one memory:// name: namespace -> session -> ledger."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.namespaces: dict[str, dict[str, _Ledger]] = {}


_named: dict[str, _Memory] = {}
_named_lock = threading.Lock()


def _memory_for(name: str) -> _Memory:
    if not name:
        return _Memory()
    with _named_lock:
        return _named.setdefault(name, _Memory())


class MemoryBackend(Backend):
    """Thread-safe: one lock makes each operation atomic."""

    schemes = ("memory",)

    def __init__(self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]) -> None:
        super().__init__(url, options, extra)
        reject_unknown_options(url, extra, ())
        host = url.hosts[0][0] if url.hosts else ""
        self._memory = _memory_for(host + url.path)
        with self._memory.lock:
            self._sessions = self._memory.namespaces.setdefault(options.namespace, {})

    def append(self, session: str, batch: Batch) -> Ack:
        with self._memory.lock:
            now = self.options.clock()
            ledger = self._live(session, now)
            if ledger is not None:
                ack = dedupe(batch.ids, {i: ledger.ids[i] for i in batch.ids if i in ledger.ids})
                if ack is not None:
                    return ack
            version = ledger.version if ledger else 0
            check_expected_version(session, batch.expect_version, version)
            if ledger is None:
                ledger = self._sessions[session] = _Ledger(now, now, None)
            first, last = version + 1, version + len(batch.ids)
            for seq, message_id in enumerate(batch.ids, first):
                ledger.ids[message_id] = (seq, first, last)
            ledger.entries.extend(batch.blobs)
            ledger.version = last
            ledger.updated_at = now
            ledger.expires_at = self.options.expiry(now)
            return Ack(first, last, last)

    def read(self, session: str, query: ReadQuery) -> RawHistory:
        with self._memory.lock:
            now = self.options.clock()
            ledger = self._live(session, now)
            if ledger is None:
                return EMPTY
            if self.options.touch_on_read:
                ledger.expires_at = self.options.expiry(now)
            low, count = query.window(ledger.version, ledger.first_seq)
            start = low - ledger.first_seq
            stop = len(ledger.entries) if count is None else start + count
            entries = list(enumerate(ledger.entries[start:stop], low))
            return RawHistory(entries, ledger.version, ledger.first_seq)

    def info(self, session: str) -> RawInfo | None:
        with self._memory.lock:
            ledger = self._live(session, self.options.clock())
            return None if ledger is None else ledger.info()

    def trim(self, session: str, keep_last: int) -> int:
        with self._memory.lock:
            ledger = self._live(session, self.options.clock())
            if ledger is None:
                return 0
            cut = max(ledger.first_seq, ledger.version - keep_last + 1)
            dropped = cut - ledger.first_seq
            del ledger.entries[:dropped]
            ledger.first_seq = cut
            return dropped

    def delete(self, session: str) -> bool:
        with self._memory.lock:
            live = self._live(session, self.options.clock()) is not None
            self._sessions.pop(session, None)
            return live

    def list_sessions(self, prefix: str, cursor: str | None) -> SessionPage:
        with self._memory.lock:
            now = self.options.clock()
            ids = sorted(
                sid for sid in list(self._sessions)  # _live() drops expired ones
                if sid.startswith(prefix) and (cursor is None or sid > cursor)
                and self._live(sid, now) is not None
            )
        page = ids[:_PAGE]
        return SessionPage(page, page[-1] if len(ids) > _PAGE else None)

    def purge(self, prefix: str) -> int:
        with self._memory.lock:
            now = self.options.clock()
            doomed = [sid for sid in self._sessions if sid.startswith(prefix)]
            live = sum(self._live(sid, now) is not None for sid in doomed)
            for sid in doomed:
                del self._sessions[sid]
            return live

    def close(self) -> None:
        """Nothing to release: a named memory lives as long as the process."""

    def _live(self, session: str, now: float) -> _Ledger | None:
        """The session's ledger, dropping it first if it has expired."""
        ledger = self._sessions.get(session)
        if ledger is not None and ledger.expires_at is not None and ledger.expires_at <= now:
            del self._sessions[session]
            return None
        return ledger
