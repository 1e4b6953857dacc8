"""Sessions to JSON Lines, a page of messages at a time."""

from __future__ import annotations

from collections.abc import Iterator

from .._messages import Message
from .._results import SessionInfo
from .._sync.store import Session
from ._records import emptied_line, json_line

PAGE = 1000  # messages read per round trip: memory stays bounded on long sessions
# Data read per round trip, roughly: pages of messages that carry megabytes of
# data shrink so that a page stays near this size.
PAGE_DATA_BYTES = 64 * 1024 * 1024


def session_lines(session: Session, info: SessionInfo | None) -> Iterator[tuple[str, int]]:
    """The session's lines, each with how many messages it holds (1, or 0 when emptied).

    ``info``: the session's state, read by the caller (None: it did not exist).
    A session tagged with a user names it on each line: an import tags it again, so
    that ``forget_user`` finds the copy too.
    """
    owner = None if info is None else info.user
    after, limit = 0, PAGE
    while True:
        page = session.read(after=after, limit=limit)
        if not page.messages and after == 0 and page.version:
            # Trimmed to nothing: the one line keeps its version.
            yield emptied_line(session.id, page.version, owner), 0
            return
        for message in page:
            yield json_line(message, session.id, owner), 1
        if len(page) < limit:
            return
        after = page.messages[-1].seq or after
        limit = _next_limit(page.messages)


def _next_limit(messages: list[Message]) -> int:
    """As many messages as PAGE_DATA_BYTES holds at the last page's data per message."""
    data = sum(len(m.data) for m in messages if m.data is not None)
    return max(1, min(PAGE, PAGE_DATA_BYTES * len(messages) // max(1, data)))
