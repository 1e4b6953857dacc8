"""Sessions to JSON Lines, a page of messages at a time."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from .._errors import CorruptEntryError
from .._messages import Message
from .._results import SessionInfo
from .._sync.store import Session, read_each
from ._records import emptied_line, json_line

PAGE = 1000  # messages read per round trip: memory stays bounded on long sessions
# Data read per round trip, roughly: pages of messages that carry megabytes of
# data shrink so that a page stays near this size.
PAGE_DATA_BYTES = 64 * 1024 * 1024


def session_lines(session: Session, info: SessionInfo | None,
                  on_damaged: Callable[[CorruptEntryError], None] | None = None,
                  ) -> Iterator[tuple[str, int]]:
    """The session's lines, each with how many messages it holds (1, or 0 when emptied).

    ``info``: the session's state, read by the caller (None: it did not exist).
    A session tagged with a user names it on each line: an import tags it again, so
    that ``forget_user`` finds the copy too. A stored entry that cannot be decoded
    raises CorruptEntryError, or with ``on_damaged`` is given to it and left out.
    """
    owner = None if info is None else info.user
    after, limit = 0, PAGE
    while True:
        entries, version = _page(session, after, limit, on_damaged)
        if not entries and after == 0 and version:
            # Trimmed to nothing: the one line keeps its version.
            yield emptied_line(session.id, version, owner), 0
            return
        for entry in entries:
            if isinstance(entry, Message):
                yield json_line(entry, session.id, owner), 1
            elif on_damaged is not None:
                on_damaged(entry)
        if len(entries) < limit:
            return
        after = entries[-1].seq or after
        limit = _next_limit([e for e in entries if isinstance(e, Message)])


def _page(session: Session, after: int, limit: int,
          on_damaged: Callable[[CorruptEntryError], None] | None,
          ) -> tuple[list[Message | CorruptEntryError], int]:
    """A page of the session and its version; a damaged entry raises, or with
    ``on_damaged`` stands in its place (the page read again entry by entry: a read
    stops at the first entry that does not decode)."""
    if on_damaged is not None:
        return read_each(session, after=after, limit=limit)
    page = session.read(after=after, limit=limit)
    return list(page.messages), page.version


def _next_limit(messages: list[Message]) -> int:
    """As many messages as PAGE_DATA_BYTES holds at the last page's data per message."""
    if not messages:  # a page of damaged entries alone says nothing of their size
        return PAGE
    data = sum(len(m.data) for m in messages if m.data is not None)
    return max(1, min(PAGE, PAGE_DATA_BYTES * len(messages) // max(1, data)))
