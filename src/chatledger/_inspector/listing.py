"""Pages of session ids, read through the store's own paged ``sessions()``.

A page is found by walking the ids in the store's order and keeping only the
window asked for (plus one, to know whether a next page exists): memory grows
with the page's position, never with the namespace. Sorting by last update
needs each session's state, so it looks at the first :data:`SORT_WINDOW` ids
that match and says so on the page.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, timezone

from .._async.store import AsyncStore
from .._results import SessionInfo

__all__ = ["SORT_WINDOW", "Page", "Row", "ids_window", "sessions_page"]

SORT_WINDOW = 1000
"""How many matching sessions ``sort=updated`` reads the state of."""


@dataclass(frozen=True)
class Row:
    id: str
    info: SessionInfo

    @property
    def expires_in(self) -> float | None:
        return seconds_left(self.info.expires_at)


@dataclass(frozen=True)
class Page:
    rows: list[Row]
    number: int
    has_next: bool
    capped: bool = False  # sort=updated looked at SORT_WINDOW sessions only


def seconds_left(moment: datetime | None) -> float | None:
    if moment is None:
        return None
    return max(0.0, (moment - datetime.now(timezone.utc)).total_seconds())


async def ids_window(ids: AsyncIterator[str], start: int, count: int,
                     keep: Callable[[str], bool] = bool) -> tuple[list[str], bool]:
    """Ids ``start`` to ``start + count`` of ``ids`` that ``keep`` accepts, and
    whether more follow. Repeats (Redis' SCAN may repeat an id) count once."""
    seen: set[str] = set()
    window: list[str] = []
    async for found in ids:
        if found in seen or not keep(found):
            continue
        seen.add(found)
        if len(seen) > start + count:
            return window, True
        if len(seen) > start:
            window.append(found)
    return window, False


async def sessions_page(store: AsyncStore, prefix: str, sort: str, number: int,
                        limit: int) -> Page:
    start = (number - 1) * limit
    if sort == "updated":
        ids, capped = await ids_window(store.sessions(prefix), 0, SORT_WINDOW)
        rows = sorted(await _rows(store, ids), key=lambda row: row.info.updated_at,
                      reverse=True)
        return Page(rows[start:start + limit], number, len(rows) > start + limit, capped)
    ids, more = await ids_window(store.sessions(prefix), start, limit)
    return Page(sorted(await _rows(store, ids), key=lambda row: row.id), number, more)


async def _rows(store: AsyncStore, ids: list[str]) -> list[Row]:
    """Each session's state; one that expired or went since it was listed is left out."""
    rows = []
    for session_id in ids:
        info = await store.session(session_id).info()
        if info is not None:
            rows.append(Row(session_id, info))
    return rows
