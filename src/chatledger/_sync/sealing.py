# Generated from src/chatledger/_async/sealing.py by scripts/unasync.py: edit that file, not this one.
"""An encrypted store's append: each entry sealed for the place it will hold.

The place (ledger id and seqs, :mod:`chatledger._places`) is what the session
handle saw last: the version and ledger of its last read, append or ``info``,
or the caller's ``expect_version`` and ``ledger``. So a turn (a read, then an
append) costs the append's one round trip, as without a keyring. A handle that
has seen nothing of an existing session asks its ``info`` first (one round trip
more); a guess the session outgrew meanwhile is refused by the backend with
the place it is at, sealed again for it and sent again. Refusals the caller
asked for (``expect_version``, ``ledger``) reach the caller as they are.
"""

from __future__ import annotations

from .._backends.contract import Batch
from .._crypto import OVERHEAD, Keyring
from .._errors import BackendUnavailable, ConflictError, MemoryLostError
from .._places import Place, seal_batch
from .._results import Ack
from .handles import SessionHandle

__all__ = ["SEAL_ATTEMPTS", "append_sealed"]

SEAL_ATTEMPTS = 20
"""Places tried in one attempt of an append before it is reported unavailable
(other writers moved the session on under every one)."""


def append_sealed(session: SessionHandle, plain: Batch, keyring: Keyring) -> Ack:
    """Append ``plain``'s entries sealed for their place; see the module."""
    placing = _Placing(session, plain, keyring)
    head = OVERHEAD + len(keyring.current.encode())
    sent = sum(map(len, plain.blobs)) + len(plain.blobs) * head
    return session.store._call("append", session.id, placing.first, placing.again,
                                     sent=sent if session.store._telemetry else 0)


class _Placing:
    """One append's attempts; the place of the latest is kept for a retry."""

    def __init__(self, session: SessionHandle, plain: Batch, keyring: Keyring) -> None:
        self.session, self.plain, self.keyring = session, plain, keyring
        self.place = _guess(session, plain)

    def first(self) -> Ack:
        return self._attempts(follow_ledger=self.plain.ledger is None)

    def again(self) -> Ack:
        """After an attempt that went unanswered: the same place, never another
        ledger (it may have been lost and written again since), and a new
        session's ledger under a new id."""
        if self.place is not None and self.place.new:
            self.place = Place.fresh()
        return self._attempts(follow_ledger=False)

    def _attempts(self, *, follow_ledger: bool) -> Ack:
        session, plain = self.session, self.plain
        for _ in range(SEAL_ATTEMPTS):
            if self.place is None:
                self.place = Place.of(session._backend.info(session.id))
            place = self.place
            if plain.expect_version is not None and place.version != plain.expect_version:
                raise ConflictError(session.id, plain.expect_version, place.version)
            batch = seal_batch(plain, self.keyring, session.store.namespace, session.id, place)
            try:
                return session._backend.append(session.id, batch)
            except ConflictError as exc:
                if plain.expect_version is not None:
                    raise
                # Pinned to the ledger, refused for the version: the ledger holds.
                self.place = None if place.new else Place(place.ledger, exc.current)
            except MemoryLostError as exc:
                if not follow_ledger:
                    raise
                self.place = (Place.fresh() if exc.found_ledger is None
                              else Place(exc.found_ledger, exc.found))
        raise BackendUnavailable(f"session {session.id!r} moved on under {SEAL_ATTEMPTS} "
                                 "attempts in a row to seal entries for their place; nothing "
                                 "was stored: appending the same messages again is safe")


def _guess(session: SessionHandle, plain: Batch) -> Place | None:
    """The place the handle expects the append at; None: ask the backend."""
    version = plain.expect_version if plain.expect_version is not None else session._version
    if version == 0 and plain.ledger is None:
        return Place.fresh()
    ledger = plain.ledger or session._ledger
    if ledger is None or version is None:
        return None
    return Place(ledger, version)
