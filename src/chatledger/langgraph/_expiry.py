"""When a thread expires: as a whole, ``ttl`` after its last sweep. No I/O.

A store's TTL is per session, and a thread is a session per namespace, so a
subgraph namespace that is not written would expire on its own while its
thread lives. chatledger has no "touch": the only thing that moves a session's
expiry is an append. So a ``put`` **sweeps** the thread when its last sweep is
a quarter of the ttl old: it appends a small keep-alive entry to every
namespace listed in the thread's index (and to the index). Every namespace is
then stored at least until ``last sweep + ttl``, and every read treats a
namespace as expired at exactly that time, so the whole thread expires at
once: between 3/4 of the ttl and the ttl after its last ``put``.

A namespace learns of a sweep from the keep-alive on it, or from its latest
checkpoint, which records the sweep its put knew of (``swept``). A keep-alive
that arrives after the namespace's expiry revives nothing; a put after it
starts the namespace over (``first``), older entries unread.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["SWEEP_AFTER", "expired", "last_sweep", "sweep_due"]

SWEEP_AFTER = 0.25
"""A put sweeps the thread when its last sweep is this fraction of the ttl old."""


def last_sweep(swept: float | None, keep_alives: Iterable[float],
               ttl: float | None) -> float | None:
    """The last sweep a namespace took part in: its latest checkpoint's ``swept``,
    moved on by the keep-alives stored after it (oldest first) while it lived."""
    for at in keep_alives:
        if swept is None or ttl is None or at < swept + ttl:
            swept = at if swept is None else max(swept, at)
    return swept


def expired(swept: float | None, now: float, ttl: float | None) -> bool:
    return ttl is not None and swept is not None and now >= swept + ttl


def sweep_due(swept: float | None, now: float, ttl: float | None) -> bool:
    return ttl is not None and (swept is None or now - swept >= ttl * SWEEP_AFTER)
