"""Where an encrypted append's entries will be stored, known before the backend says.

A sealed entry is bound to its place (:mod:`chatledger._crypto`): its ledger id
and seq are in the authenticated data. Both are assigned by the backend, in the
same atomic step that stores the entries, so the store seals for the place it
expects, a :class:`Place`, and sends the batch pinned to it: expected at that
version (and on that ledger, or creating a ledger of the id it sealed for). The
backend stores it there or refuses it whole; a refusal the caller did not ask
for (the session moved on meanwhile) is answered by sealing again for the place
the refusal reports. A retried batch all of whose ids are stored is
recognized by its ids before any of this, so retries stay idempotent.

Nothing here does I/O: the loop that asks is :mod:`chatledger._async.sealing`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._backends.contract import Batch, RawInfo, new_ledger_id
from ._crypto import Keyring

__all__ = ["Place", "seal_batch"]


@dataclass(frozen=True)
class Place:
    """A ledger at a version: an append there stores its entries at ``version + 1``
    onwards. ``new``: the session does not exist; the append creates ``ledger``."""

    ledger: str
    version: int
    new: bool = False

    @classmethod
    def fresh(cls) -> Place:
        """A new ledger, of an id never used before (so a retry of it is resealed
        with another: a ledger lost and created again never repeats an id)."""
        return cls(new_ledger_id(), 0, new=True)

    @classmethod
    def of(cls, state: RawInfo | None) -> Place:
        """Where a session stands, from its state (None: it does not exist)."""
        return cls.fresh() if state is None else cls(state.ledger, state.version)


def seal_batch(plain: Batch, keyring: Keyring, namespace: str, session: str,
               place: Place) -> Batch:
    """``plain``'s entries sealed for ``place``, and the batch pinned to it.

    Pinned by the version (the caller's ``expect_version``, if given, is
    ``place.version``: the caller checks), and by the ledger unless the session
    is new (then by the id of the ledger it creates). A ledger the caller did
    not name is not strict: a batch already stored whole is its own retry on
    any ledger.
    """
    blobs = [keyring.seal(namespace, session, place.ledger, seq, blob)
             for seq, blob in enumerate(plain.blobs, place.version + 1)]
    if place.new:
        return Batch(plain.ids, blobs, 0, plain.ledger, plain.strict, plain.user, place.ledger)
    return Batch(plain.ids, blobs, place.version, place.ledger, plain.ledger is not None,
                 plain.user)
