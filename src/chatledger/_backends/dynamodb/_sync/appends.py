# Generated from src/chatledger/_backends/dynamodb/_async/appends.py by scripts/unasync.py: edit that file, not this one.
"""An append: read the meta item, plan, write in one conditional transaction; again
while writers of other processes win the race for the meta item.

The transaction updates the meta item on the condition that its version and
ledger are still the ones read (or, for a new session, that it does not exist),
puts each entry, and puts each id item on the condition that the id is not
stored in this ledger. Two writers can therefore never both succeed, and a retry
of a stored batch fails the id conditions, which sends it to the lookup that
answers with its original Ack. A writer whose meta condition failed lost a race:
it reads again and tries again (:mod:`..races`). Such races are between
processes (or stores): one backend's own appends to a session take turns, in
order of arrival, rather than race each other. A batch one transaction cannot
hold takes the large path (:mod:`.large`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ...._errors import BackendUnavailable, ConflictError, MemoryLostError, SessionUserError
from ...._results import Ack
from ...contract import Batch, RawInfo, StoredId, plan_append
from .. import races
from ..conditions import UNREAD, Seen
from ..layout import Meta, id_key
from ..leases import token
from ..transactions import large
from .large import LargeAppends

__all__ = ["Appends"]


@dataclass(frozen=True)
class _Appended:
    ack: Ack
    meta: Meta | None  # the meta item after the append


@dataclass(frozen=True)
class _Again:
    """Not appended: try again from ``meta``; ``lost``: another writer won the race
    (pause first), else the item this try started from was only remembered."""

    meta: Seen
    lost: bool


class Appends(LargeAppends):
    """The append of the backend contract."""

    def append(self, session: str, batch: Batch) -> Ack:
        with self._turns.of(session, f"dynamodb {self._where}"):
            return self._race(session, batch)

    def _race(self, session: str, batch: Batch) -> Ack:
        """Append, reading again and retrying as long as other writers win the meta item."""
        meta, fresh = self._known.get(session), False
        for attempt in range(races.RACES):
            if meta is UNREAD:
                meta, fresh = self._meta(session), True
            started = time.monotonic()
            try:
                outcome = self._append_once(session, batch, meta, fresh)
            except Exception:
                self._known.forget(session)
                raise
            if isinstance(outcome, _Appended):
                self._known.remember(session, outcome.meta)
                return outcome.ack
            meta, fresh = outcome.meta, outcome.meta is not UNREAD
            if outcome.lost:
                self._known.forget(session)
                time.sleep(races.backoff(time.monotonic() - started, attempt,
                                                  self._where, session))
        raise BackendUnavailable(f"dynamodb {self._where}: session {session!r} changed "
                                 f"under {races.RACES} attempts in a row")

    def _append_once(self, session: str, batch: Batch, meta: Meta | None,
                           fresh: bool) -> _Appended | _Again:
        """Append once from ``meta``, read just now (``fresh``) or remembered.

        The ids are looked up only when the plan refuses the batch as new (it
        may be a retry, which a retry's Ack answers) or a large one will not
        be fenced by the id items' conditions; otherwise a condition on each
        id item finds a stored id, and the plan is asked again with it.
        """
        now = self.options.clock()
        expires = self.options.expiry(now)
        state = self._live(meta, now)
        refused = _refuses(session, batch, state, now, expires)
        if not fresh and (refused or (meta is not None and (state is None or meta.lease))):
            # only a meta item just read may refuse, or replace an expired one
            return _Again(UNREAD, lost=False)
        if meta is not None and meta.lease is not None and meta.lease != token(batch, meta):
            self._settle_lease(session, meta)
            return _Again(UNREAD, lost=True)
        found: dict[str, StoredId] = {}
        if state is not None and (refused or large(batch)):
            found = self._stored_ids(session, batch.ids, state)
        plan = plan_append(session, batch, state, found, now=now, expires=expires)
        if isinstance(plan, Ack):
            return _Appended(plan, meta)
        grown = plan.state
        if large(batch):
            refusal = self._append_large(session, meta, state, grown, batch)
            if refusal is not None:
                return _Again(refusal.meta, lost=True)
            return _Appended(plan.ack, Meta(grown))
        refusal = self._transact([
            self.items.meta_write(session, meta, state, grown, now=now),
            *self.items.message_items(session, plan.first_seq, grown.ledger, batch, "",
                                      conditional=True),
            *self.items.indexed(session, state, grown)])
        if refusal is None:
            return _Appended(plan.ack, Meta(grown))
        if not refusal.ids_stored or state is None:
            # the meta item moved on (a new ledger's ids are new: so did it)
            return _Again(refusal.meta, lost=True)
        stored = self._stored_ids(session, batch.ids, state)
        again = plan_append(session, batch, state, stored, now=now, expires=expires)
        if not isinstance(again, Ack):
            return _Again(UNREAD, lost=True)
        return _Appended(again, meta)

    def _stored_ids(self, session: str, ids: list[str],
                          state: RawInfo) -> dict[str, StoredId]:
        """Where each of ``ids`` is stored in the session's ledger (committed ones only)."""
        keys = {id_key(i.encode("utf-8", "surrogatepass")): i for i in ids}
        found: dict[str, StoredId] = {}
        for item in self._get_many(session, list(keys)):
            if item["ledger"]["S"] == state.ledger and int(item["seq"]["N"]) <= state.version:
                found[keys[item["sk"]["S"]]] = (int(item["seq"]["N"]), int(item["bf"]["N"]),
                                                int(item["bl"]["N"]))
        return found


def _refuses(session: str, batch: Batch, state: RawInfo | None, now: float,
             expires: float | None) -> bool:
    """Whether the plan refuses ``batch`` on ``state`` if none of its ids is stored."""
    try:
        plan_append(session, batch, state, {}, now=now, expires=expires)
    except (ConflictError, MemoryLostError, SessionUserError):
        return True
    return False
