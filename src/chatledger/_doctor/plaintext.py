"""Doctor's check of an encrypted namespace: entries stored in the clear.

A store with a keyring refuses them (they could be anyone's forgery), so each
is a read that fails; they are written before encryption was turned on, or
by a process without the keyring, or straight into the database. Only the
format byte of each entry is looked at: nothing is opened, no key is needed
beyond the one that says the namespace is encrypted.

Cost: every entry of the namespace is read once, a page (:data:`PAGE`
entries) per round trip.
"""

from __future__ import annotations

from .._backends.contract import RawHistory, ReadQuery
from .._checks import Check
from .._crypto import sealed_key_id
from .._sync.store import Store, call_raw

__all__ = ["PAGE", "clear_entries"]

PAGE = 500
"""Entries read per round trip."""


def clear_entries(store: Store) -> Check:
    """How many entries of the store's namespace are stored in the clear, and where."""
    found: dict[str, int] = {}
    for session in store.sessions():
        count = _clear_in(store, session)
        if count:
            found[session] = count
    total = sum(found.values())
    where = f"namespace {store.namespace!r}"
    if not total:
        return Check("plaintext", "ok", f"every entry of {where} is sealed", 0)
    first = ", ".join(repr(s) for s in sorted(found)[:3]) + (", ..." if len(found) > 3 else "")
    window = store.options.allow_plaintext
    return Check("plaintext", "warn" if window else "fail",
                 f"{total} entries of {where} are stored in the clear ({len(found)} "
                 f"session(s): {first}): "
                 + ("read in the migration window (allow_plaintext=True)" if window
                    else "every read of them is refused")
                 + "; `chatledger rotate-key` seals them", total)


def _clear_in(store: Store, session: str) -> int:
    count, query = 0, ReadQuery(limit=PAGE)
    while True:
        raw = _page(store, session, query)
        count += sum(sealed_key_id(session, seq, blob) is None for seq, blob in raw.entries)
        if len(raw.entries) < PAGE:
            return count
        query = ReadQuery(after=raw.entries[-1][0], limit=PAGE)


def _page(store: Store, session: str, query: ReadQuery) -> RawHistory:
    """One page of the session's stored entries, as they are (sealed or not)."""
    return call_raw(store, "plaintext", session, lambda backend: backend.read(session, query))
