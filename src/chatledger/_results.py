"""What store operations return."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime

from ._filled import set_at_once
from ._messages import Message

__all__ = ["Ack", "ForgetReport", "History", "RotationReport", "SessionInfo"]


@set_at_once  # every append builds one
@dataclass(frozen=True)
class Ack:
    """An acknowledged append: the batch holds seqs ``first_seq..last_seq``.

    ``version`` is the session's version right after this batch was stored.
    ``deduplicated`` is true when every id was already stored and nothing new
    was written: this Ack then describes the original append. ``ledger`` names
    the ledger the batch is in: pass it to ``read(ledger=...)`` to detect a
    session that was lost and written again. ``redacted`` counts the messages of
    the batch that the store's ``redact`` hook changed before storing them.
    """

    first_seq: int
    last_seq: int
    version: int
    deduplicated: bool = False
    ledger: str = field(default="", kw_only=True)
    redacted: int = field(default=0, kw_only=True)


@dataclass(frozen=True)
class History:
    """A window of a session's ledger, read at one consistent version.

    ``first_seq`` is the lowest seq the session still stores; when it is above 1
    older context was trimmed. A session that does not exist has version 0 and
    ledger None.

    A read with ``max_tokens`` or ``with_summary`` fills in the rest:
    ``summary``, the latest summary entry (its messages come after its
    ``through_seq``); ``tokens``, what the summary and messages count (with
    ``max_tokens`` only: counting costs);
    ``cut_seq``, the newest seq the budget left out (0: none); and
    ``over_budget``, true when the newest message (with its tool results) did
    not fit alone and was returned anyway.
    """

    messages: list[Message]
    version: int
    first_seq: int
    ledger: str | None = None
    summary: Message | None = field(default=None, kw_only=True)
    tokens: int | None = field(default=None, kw_only=True)
    cut_seq: int = field(default=0, kw_only=True)
    over_budget: bool = field(default=False, kw_only=True)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self.messages)


@dataclass(frozen=True)
class SessionInfo:
    """What a session holds, without reading its messages; ``user``: the user
    its first append tagged it with (None: untagged)."""

    version: int
    count: int
    first_seq: int
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    ledger: str = ""
    user: str | None = field(default=None, kw_only=True)


@dataclass(frozen=True)
class ForgetReport:
    """What ``forget_user`` deleted (or, with ``dry_run``, would delete).

    ``deleted``: the ids of the user's sessions that were deleted, LangGraph
    threads' sessions included; ``threads``: the LangGraph thread ids among
    them. ``already_gone``: sessions the user index named that no longer
    existed (expired, deleted, or removed by an erasure cut short); their
    index entries are removed. ``still_written``: sessions a writer kept
    recreating through every round; they are indexed, so running
    ``forget_user`` again once the writer stopped removes them.
    """

    user: str
    deleted: tuple[str, ...] = ()
    threads: tuple[str, ...] = ()
    already_gone: tuple[str, ...] = ()
    still_written: tuple[str, ...] = ()
    dry_run: bool = False

    @property
    def sessions_deleted(self) -> int:
        return len(self.deleted)

    @property
    def threads_deleted(self) -> int:
        return len(self.threads)

    @property
    def complete(self) -> bool:
        """Whether nothing of the user was left: no session still being written."""
        return not self.still_written


@dataclass(frozen=True)
class RotationReport:
    """What ``store.rotate_key()`` did to the namespace (or, ``dry_run``, would do).

    ``resealed``: entries sealed with an older key, now sealed with ``key_id``;
    ``encrypted``: entries stored in the clear, now sealed; ``current``: entries
    already sealed with ``key_id``, left alone; ``changed``: entries trimmed,
    deleted or rewritten between being read and being replaced, left as they
    now are (a second run finds them sealed with ``key_id``, or gone).
    ``sessions`` counts the sessions visited.
    """

    key_id: str
    sessions: int = 0
    resealed: int = 0
    encrypted: int = 0
    current: int = 0
    changed: int = 0
    dry_run: bool = False

    @property
    def rewritten(self) -> int:
        """Entries replaced (or, in a dry run, that would be): ``resealed + encrypted``."""
        return self.resealed + self.encrypted
