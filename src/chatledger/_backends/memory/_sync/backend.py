# Generated from src/chatledger/_backends/memory/_async/backend.py by scripts/unasync.py: edit that file, not this one.
"""The memory backend's steps; the state and its rules are in
:mod:`chatledger._backends.memory.state`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ...._checks import Check
from ...._errors import BackendError
from ...._options import StoreOptions
from ...._url import StoreURL
from ..._sync.transactional import TransactionalBackend
from ...contract import Batch, RawInfo, Reseal, StoredId
from ...registry import builtin_schemes, reject_unknown_options
from ..state import Ledger, memory_for

__all__ = ["MemoryBackend"]

Sessions = dict[str, Ledger]


class MemoryBackend(TransactionalBackend[Sessions]):
    """A transaction holds the memory's lock; its steps never await."""

    schemes = builtin_schemes(__name__)

    def __init__(self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]) -> None:
        super().__init__(url, options, extra)
        reject_unknown_options(url, extra, ())
        host = url.hosts[0][0] if url.hosts else ""
        self._memory = memory_for(host + url.path)
        self._closed = False
        with self._memory.lock:
            self._sessions = self._memory.namespaces.setdefault(options.namespace, {})
            self._users = self._memory.users.setdefault(options.namespace, {})

    @contextmanager
    def _transaction(self, *, write: bool) -> Iterator[Sessions]:
        if self._closed:  # as every other backend: a closed store is unusable
            raise BackendError(f"the store {self.url.redacted()} is closed")
        with self._memory.lock:
            yield self._sessions

    def _load(self, tx: Sessions, session: str) -> RawInfo | None:
        ledger = tx.get(session)
        return None if ledger is None else ledger.state

    def _save(self, tx: Sessions, session: str, state: RawInfo, *, created: bool) -> None:
        tx.setdefault(session, Ledger()).state = state
        if created and state.user is not None:
            self._users.setdefault(state.user, set()).add(session)

    def _stored_ids(
        self, tx: Sessions, session: str, ids: list[str],
    ) -> dict[str, StoredId]:
        stored = tx[session].ids
        return {i: stored[i] for i in ids if i in stored}

    def _insert(self, tx: Sessions, session: str, first_seq: int, batch: Batch) -> None:
        ledger = tx.setdefault(session, Ledger())
        last = first_seq + len(batch.ids) - 1
        for seq, message_id in enumerate(batch.ids, first_seq):
            ledger.ids[message_id] = (seq, first_seq, last)
        ledger.entries.extend(batch.blobs)

    def _entries(
        self, tx: Sessions, session: str, low: int, count: int | None,
    ) -> list[tuple[int, bytes]]:
        ledger = tx[session]
        assert ledger.state is not None  # the base reads only live sessions
        start = low - ledger.state.first_seq
        stop = len(ledger.entries) if count is None else start + count
        return list(enumerate(ledger.entries[start:stop], low))

    def _cut(self, tx: Sessions, session: str, below: int) -> None:
        ledger = tx[session]
        assert ledger.state is not None
        del ledger.entries[: below - ledger.state.first_seq]

    def _drop(self, tx: Sessions, session: str) -> None:
        ledger = tx.pop(session, None)
        user = None if ledger is None or ledger.state is None else ledger.state.user
        if user is not None:
            self._users[user].discard(session)
            if not self._users[user]:
                del self._users[user]

    def _users_sessions(self, tx: Sessions, user: str) -> list[str]:
        return sorted(self._users.get(user, ()))

    def _page(
        self, tx: Sessions, prefix: str, after: str | None, now: float, count: int,
    ) -> list[str]:
        ids = sorted(sid for sid, ledger in tx.items()
                     if sid.startswith(prefix) and (after is None or sid > after)
                     and ledger.state is not None and not ledger.state.expired(now))
        return ids[:count]

    def _namespaces(self, tx: Sessions, now: float) -> list[str]:
        # the transaction holds the memory's lock, which guards every namespace
        return sorted(name for name, sessions in self._memory.namespaces.items()
                      if any(not _expired(ledger, now) for ledger in sessions.values()))

    def _purge(self, tx: Sessions, prefix: str, now: float) -> int:
        doomed = [sid for sid in tx if sid.startswith(prefix)]
        live = sum(1 for sid in doomed if not _expired(tx[sid], now))
        for sid in doomed:
            self._drop(tx, sid)
        return live

    def _reseal(self, tx: Sessions, session: str, entries: list[Reseal]) -> int:
        ledger = tx[session]
        assert ledger.state is not None
        replaced = 0
        for seq, old, new in entries:
            if ledger.entries[seq - ledger.state.first_seq] == old:
                ledger.entries[seq - ledger.state.first_seq] = new
                replaced += 1
        return replaced

    def close(self) -> None:
        """Nothing to release (a named memory lives as long as the process); the store's
        later calls are refused, as on the backends that do hold connections."""
        self._closed = True

    def checks(self) -> list[Check]:
        return [Check("durability", "warn", "memory:// keeps nothing when the process ends")]

    def corrupt_entry(self, session: str, seq: int, blob: bytes) -> None:
        with self._transaction(write=True) as tx:
            ledger = tx[session]
            assert ledger.state is not None and ledger.state.first_seq <= seq
            ledger.entries[seq - ledger.state.first_seq] = blob


def _expired(ledger: Ledger, now: float) -> bool:
    return ledger.state is None or ledger.state.expired(now)
