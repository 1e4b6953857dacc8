# Generated from src/chatledger/_async/rotation.py by scripts/unasync.py: edit that file, not this one.
"""Key rotation: every entry of a namespace sealed again with the keyring's current key.

Online. Entries are read a page at a time, opened, sealed with the current key
and handed back to the backend's ``reseal``, which replaces each one in one
atomic unit, and only while it still holds the bytes that were read. So an
append meanwhile (sealed with the current key already) is never touched; a trim,
a delete or a session written again is never overwritten (its bytes differ: a
sealed entry's nonce is random); and a reader sees either the old entry or the
new one, which open to the same message. The entry keeps its seq, and the
session its version, ids, times and expiry: the ledger's promises do not see a
rotation happen.

Resumable and idempotent without a cursor to keep: an entry already sealed with
the current key is left alone, so a run cut short and started again rewrites
only what is left, and a second run rewrites nothing. Entries stored in the
clear (written before the store had a keyring) are sealed too, whether or not
the store allows plaintext: a run ends the migration window.

Proven, not assumed: an entry already sealed under the current key id is
opened too (at its place), so a run with the wrong bytes under that id, or
over an entry altered or moved, stops with EncryptionKeyError instead of
reporting everything current and letting the old keys go.

Cost: every entry of the namespace is read and opened once, and the ones
rewritten are sent back, a page (:data:`PAGE` entries) per round trip.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial

from .._backends.contract import ReadQuery, Reseal
from .._core import check_window
from .._crypto import Keyring, sealed_key_id, unseal
from .._errors import ConfigError
from .._results import RotationReport
from .handles import StoreHandle

__all__ = ["PAGE", "rotate_namespace"]

PAGE = 200
"""Entries read, and re-sealed, per round trip."""


def rotate_namespace(store: StoreHandle, *, dry_run: bool = False) -> RotationReport:
    """Seal every entry of ``store``'s namespace with its keyring's current key."""
    keyring = store.options.encryption
    if keyring is None:
        raise ConfigError("rotating keys needs the store's keyring: open it with "
                          "encryption=Keyring(...) whose current key is the new one and "
                          "holding the old ones")
    report = RotationReport(keyring.current, dry_run=dry_run)
    for session in store.sessions():
        report = _rotate_session(store, keyring, session, report)
    return report


def _rotate_session(store: StoreHandle, keyring: Keyring, session: str,
                          report: RotationReport) -> RotationReport:
    report = replace(report, sessions=report.sessions + 1)
    after = 0
    while True:
        query = ReadQuery(after=after, limit=PAGE)
        raw = store._call("rotate_key", session,
                               partial(store._backend.read, session, query))
        # A page lacking an entry (lost under the store) stops the run, naming it: a
        # short page read as the last one left every entry after it on the old key.
        check_window(session, raw, query)
        page = _Page.of(keyring, store.namespace, session, raw.ledger or "", raw.entries)
        replaced = len(page.entries)
        if page.entries and not report.dry_run:
            replaced = store._call("rotate_key", session,
                                         partial(store._backend.reseal, session, page.entries))
        report = replace(report, resealed=report.resealed + page.resealed,
                         encrypted=report.encrypted + page.encrypted,
                         current=report.current + page.current,
                         changed=report.changed + len(page.entries) - replaced)
        if len(raw.entries) < PAGE:
            return report
        after = raw.entries[-1][0]


@dataclass(frozen=True)
class _Page:
    """One page of a session's entries: what to re-seal, and what was found."""

    entries: list[Reseal]
    resealed: int
    encrypted: int
    current: int

    @classmethod
    def of(cls, keyring: Keyring, namespace: str, session: str, ledger: str,
           stored: list[tuple[int, bytes]]) -> _Page:
        """Open each entry (EncryptionKeyError when the keyring lacks its key or
        it does not open at its place) and seal those not sealed with the
        current key with it."""
        kinds = [sealed_key_id(session, seq, blob) for seq, blob in stored]
        entries: list[Reseal] = []
        for (seq, blob), kind in zip(stored, kinds, strict=True):
            clear = unseal(keyring, namespace, session, ledger, (seq, blob), allow_plaintext=True)
            if kind != keyring.current:
                entries.append((seq, blob, keyring.seal(namespace, session, ledger, seq, clear)))
        encrypted = kinds.count(None)
        current = kinds.count(keyring.current)
        return cls(entries, len(entries) - encrypted, encrypted, current)
