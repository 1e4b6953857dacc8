"""Import what langchain_community's ``RedisChatMessageHistory`` wrote.

It keeps a session as a Redis list at ``key_prefix + session_id`` and ``LPUSH``es
each message as JSON (``message_to_dict``), so a list holds the newest message
first. Each list becomes the chatledger session of the same id, oldest message
first, in batches of ``batch_size`` atomic appends. Needs the ``redis`` extra.

Running it again imports nothing new: every message gets a stable ledger id (its
own LangChain id, or one derived from its key, its exact stored text and which
copy of that text it is; see :mod:`.ids`), and messages already in the session
are skipped. An entry that cannot be decoded, or not stored exactly, is reported
with its key and list index and left behind; the rest of its session is
imported. Import before the application starts writing to chatledger: messages
found later go after what the session holds by then.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import cast

import redis
from langchain_core.messages import messages_from_dict

from .._errors import InvalidMessage
from .._langchain_messages import to_ledger
from .._messages import Message
from .._sync.store import Session, Store
from .._validation import encode_batch
from ._ids import migrated_id

__all__ = ["MigrationReport", "Row", "Undecodable", "import_session", "migrate_from_langchain"]

Progress = Callable[[int, int], None]
"""Called after each list with (lists done, lists in all): enough for a progress bar."""


@dataclass(frozen=True)
class Undecodable:
    """An entry (or a whole key, when ``index`` is None) that was not imported."""

    key: str
    index: int | None  # the entry's position in the list: LINDEX key index
    reason: str

    def __str__(self) -> str:
        where = self.key if self.index is None else f"{self.key} [{self.index}]"
        return f"{where}: {self.reason}"


@dataclass
class MigrationReport:
    """What a migration did, or with ``dry_run`` would do."""

    dry_run: bool
    unit: str = "list"  # what keys_found counts: Redis lists, or table sessions
    keys_found: int = 0
    sessions_imported: int = 0  # sessions that received at least one message
    messages_imported: int = 0
    messages_present: int = 0  # already in chatledger, from an earlier run
    duplicates: int = 0  # entries repeating an earlier entry's id in their list
    undecodable: list[Undecodable] = field(default_factory=list)

    def summary(self) -> str:
        """The report for a person, one fact a line."""
        verb = "would import" if self.dry_run else "imported"
        lines = [
            f"{_count(self.keys_found, self.unit)} found",
            f"{verb} {_count(self.messages_imported, 'message')} "
            f"into {_count(self.sessions_imported, 'session')}",
            f"{_count(self.messages_present, 'message')} already in chatledger",
            f"{_count(self.duplicates, 'duplicate entry', 'duplicate entries')} skipped "
            f"(an id seen earlier in the same {self.unit})",
            f"{_count(len(self.undecodable), 'entry', 'entries')} could not be imported"
            + (":" if self.undecodable else ""),
        ]
        lines.extend(f"  {entry}" for entry in self.undecodable)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


def migrate_from_langchain(
    redis_url: str,
    key_prefix: str,
    store: Store,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
    batch_size: int = 1000,
) -> MigrationReport:
    """Import every list under ``key_prefix`` at ``redis_url`` into ``store``."""
    migration = _Migration(key_prefix.encode(), store, MigrationReport(dry_run), batch_size)
    client = redis.Redis.from_url(redis_url)
    try:
        pattern = _literal(migration.prefix) + b"*"
        keys = sorted(set(client.scan_iter(match=pattern, count=1000, _type="list")))
        migration.report.keys_found = len(keys)
        for done, key in enumerate(keys, 1):
            migration.import_list(key, cast("list[bytes]", client.lrange(key, 0, -1)))
            if progress is not None:
                progress(done, len(keys))
    finally:
        client.close()
    return migration.report


@dataclass
class _Migration:
    prefix: bytes
    store: Store
    report: MigrationReport
    batch_size: int

    def import_list(self, key: bytes, entries: list[bytes]) -> None:
        name = key.decode("utf-8", "backslashreplace")
        try:
            session = self.store.session(key[len(self.prefix):].decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            self.report.undecodable.append(
                Undecodable(name, None, f"not a usable session id: {exc}"))
            return
        messages = list(self._decoded(key, name, entries))
        present = _stored_ids(session)
        new = [message for message in messages if message.id not in present]
        self.report.messages_present += len(messages) - len(new)
        if new:
            self.report.sessions_imported += 1
            self.report.messages_imported += len(new)
        if not self.report.dry_run:
            for start in range(0, len(new), self.batch_size):
                session.append(new[start:start + self.batch_size])

    def _decoded(self, key: bytes, name: str, entries: list[bytes]) -> Iterator[Message]:
        """The list's messages, oldest first, each storable exactly or reported."""
        copies: Counter[bytes] = Counter()
        ids: set[str] = set()
        for index in reversed(range(len(entries))):  # LPUSH: the oldest is last
            entry = entries[index]
            copies[entry] += 1
            try:
                message = _decode(entry, migrated_id(key, entry, copies[entry]),
                                  self.store.options.max_message_bytes)
            except (ValueError, KeyError, TypeError, RecursionError, InvalidMessage) as exc:
                self.report.undecodable.append(Undecodable(name, index, _reason(exc)))
                continue
            if message.id in ids:  # RedisChatMessageHistory stored a retry twice
                self.report.duplicates += 1
                continue
            ids.add(message.id)
            yield message


def _decode(entry: bytes, ledger_id: str, max_bytes: int) -> Message:
    (langchain_message,) = messages_from_dict([json.loads(entry)])
    message = to_ledger(langchain_message, ledger_id=ledger_id)
    encode_batch([message], max_bytes)  # what the append would refuse, found per entry
    return message


def _stored_ids(session: Session) -> set[str]:
    ids: set[str] = set()
    after = 0
    while True:
        page = session.read(after=after, limit=1000).messages
        if not page:
            return ids
        ids.update(message.id for message in page)
        after = cast("int", page[-1].seq)  # messages read back always carry their seq


def _literal(text: bytes) -> bytes:
    """``text`` as a SCAN pattern that matches only itself: every byte escaped."""
    return b"".join(b"\\" + bytes([byte]) for byte in text)


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _reason(exc: Exception) -> str:
    if isinstance(exc, InvalidMessage):
        return f"cannot be stored exactly: {str(exc).replace('messages[0]', 'message', 1)}"
    return f"{type(exc).__name__}: {exc}"


Row = tuple[str, int, str]
"""A source's message: its session, its id in the source (for the report), its JSON."""


def import_session(store: Store, report: MigrationReport, table: str, session_id: str, *,
                   rows: list[Row], batch_size: int) -> None:
    """Import one session's rows ``(session, row id, message JSON)``, oldest first, skipping
    what is stored already; ``table`` names the source in ids and in the report."""
    session = store.session(session_id)
    messages = list(_decoded(store, report, table, session_id, rows))
    present = _stored_ids(session)
    new = [message for message in messages if message.id not in present]
    report.messages_present += len(messages) - len(new)
    if new:
        report.sessions_imported += 1
        report.messages_imported += len(new)
    if not report.dry_run:
        for start in range(0, len(new), batch_size):
            session.append(new[start:start + batch_size])


def _decoded(store: Store, report: MigrationReport, table: str, session_id: str,
             rows: list[Row]) -> Iterator[Message]:
    ids: set[str] = set()
    where = f"{table} session {session_id}"
    for _, row_id, text in rows:
        ledger_id = migrated_id(f"{table}/{session_id}".encode(), str(row_id).encode(), 1)
        try:
            message = _decode(text.encode(), ledger_id, store.options.max_message_bytes)
        except (ValueError, KeyError, TypeError, RecursionError, InvalidMessage,
                json.JSONDecodeError) as exc:
            report.undecodable.append(Undecodable(where, row_id, _reason(exc)))
            continue
        if message.id in ids:  # the same LangChain message stored twice
            report.duplicates += 1
            continue
        ids.add(message.id)
        yield message
