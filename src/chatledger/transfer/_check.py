"""The first pass of an import: every line read and checked, as an append would check it.

Nothing is written and no message is kept: what the pass keeps is a small
plan per session (its seqs and where its lines end) and, on disk, the ids
met so far, so that its memory does not grow with the file.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from .._errors import InvalidMessage
from .._validation import check_key, encode_batch
from ._errors import BadRecord
from ._records import Emptied, Line, parse_line


@dataclass
class SessionPlan:
    """What the file holds of one session: its seqs, and the line its last one is on."""

    index: int  # the session's number in the file, a short key for its ids on disk
    first_seq: int
    last_seq: int
    last_line: int
    emptied: int | None = None  # trimmed to nothing: the version its one line gives
    user: str | None = None  # the session's user (forget_user), as its lines name it


def numbered(file: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """The file's lines that are not blank, with their numbers (from 1)."""
    for number, raw in enumerate(file, 1):
        if raw.strip():
            yield number, raw


def check_file(file: IO[bytes], max_message_bytes: int) -> dict[str, SessionPlan]:
    """Read every line; ``BadRecord`` names the first that an import could not store."""
    sessions: dict[str, SessionPlan] = {}
    with _SeenIds() as seen:
        for number, raw in numbered(file):
            line = parse_line(raw, number)
            plan = _follow(sessions, line)
            if isinstance(line, Line):
                _validate(line, max_message_bytes)
                seen.add(plan.index, line)
    return sessions


def _follow(sessions: dict[str, SessionPlan], line: Line | Emptied) -> SessionPlan:
    """The session's plan, extended by ``line``: a session's seqs follow one another."""
    plan = sessions.get(line.session)
    if plan is None:
        try:
            check_key(line.session, "session id")
        except ValueError as exc:
            raise BadRecord(line.number, str(exc), "session") from None
        emptied = line.version if isinstance(line, Emptied) else None
        seq = line.seq if isinstance(line, Line) else 0
        plan = sessions[line.session] = SessionPlan(len(sessions), seq, seq, line.number,
                                                    emptied, line.user)
        return plan
    if isinstance(line, Emptied) or plan.emptied is not None:
        raise BadRecord(line.number, f"session {line.session!r} appears again; a session "
                        "trimmed to nothing has one line, its version", "session")
    if line.user != plan.user:
        raise BadRecord(line.number, f"session {line.session!r} is of user {line.user!r} "
                        f"here and of {plan.user!r} before; a session has one user", "user")
    if line.seq != plan.last_seq + 1:
        raise BadRecord(line.number, f"session {line.session!r} goes from seq "
                        f"{plan.last_seq} to {line.seq}; an import keeps seqs, so they must "
                        "follow one another", "seq")
    plan.last_seq, plan.last_line = line.seq, line.number
    return plan


def _validate(line: Line, max_message_bytes: int) -> None:
    """The store's own validation, so the error is the one an append would give."""
    try:
        encode_batch([line.message], max_message_bytes)
    except InvalidMessage as exc:
        # "messages[0].metadata.n" in a batch of one is the line's "metadata.n".
        field = re.sub(r"^messages\[0\]\.?", "", exc.field) or None
        reason = f"{field}: {exc.reason}" if field else f"the message {exc.reason}"
        raise BadRecord(line.number, reason, field) from None


class _SeenIds:
    """The ids met so far, per session: an id must not repeat within a session.

    A set would grow with the file; SQLite's private temporary database (file
    name "") keeps a few MB of pages in memory, the rest in a file deleted on close.
    """

    def __init__(self) -> None:
        self._db = sqlite3.connect("")
        self._db.execute("CREATE TABLE ids (session INTEGER, id TEXT, line INTEGER, "
                         "PRIMARY KEY (session, id)) WITHOUT ROWID")

    def __enter__(self) -> _SeenIds:
        return self

    def __exit__(self, *exc: object) -> None:
        self._db.close()

    def add(self, session: int, line: Line) -> None:
        try:
            self._db.execute("INSERT INTO ids VALUES (?, ?, ?)",
                             (session, line.message.id, line.number))
        except sqlite3.IntegrityError:
            (first,), = self._db.execute("SELECT line FROM ids WHERE session = ? AND id = ?",
                                         (session, line.message.id))
            raise BadRecord(line.number, f"id {line.message.id!r} is on line {first} too: "
                            "these ids appear earlier in the file", "id") from None
