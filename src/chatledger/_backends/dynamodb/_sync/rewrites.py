# Generated from src/chatledger/_backends/dynamodb/_async/rewrites.py by scripts/unasync.py: edit that file, not this one.
"""Trimming a session's oldest entries, and resealing entries in place (key rotation)."""

from __future__ import annotations

import hashlib
from typing import Any

from ...._errors import BackendError
from ...contract import Reseal, trim_cut
from .. import races
from ..layout import META, entry_key, number, part_key, seq_of
from ..transactions import INLINE, TX_BYTES, Group, pieces, whole_groups
from .reads import Reads

__all__ = ["Rewrites"]


class Rewrites(Reads):
    """``trim`` and ``reseal``."""

    def trim(self, session: str, keep_last: int, through_seq: int | None = None) -> int:
        self._known.forget(session)
        for _ in range(races.RACES):
            state = self._live(self._meta(session), self.options.clock())
            if state is None:
                return 0
            cut = trim_cut(state.first_seq, state.version, keep_last, through_seq)
            if cut == state.first_seq:
                return 0
            refusal = self._transact([{"Update": {
                "TableName": self.table, "Key": self.items.key(session, META),
                "UpdateExpression": "SET #first = :cut",
                "ConditionExpression": "ledger = :ledger AND #first = :first",
                "ExpressionAttributeNames": {"#first": "first"},
                "ExpressionAttributeValues": {":cut": number(cut),
                                              ":ledger": {"S": state.ledger},
                                              ":first": number(state.first_seq)}}}])
            if refusal is not None:
                continue
            gone = self._query(session, "sk BETWEEN :low AND :high",
                                     {":low": {"S": entry_key(state.first_seq)},
                                      ":high": {"S": entry_key(cut - 1)}}, keys_only=True)
            self._delete_items(session, _with_parts(gone), "ledger", state.ledger)
            return cut - state.first_seq
        raise races.kept_changing(self._where, session)

    def reseal(self, session: str, entries: list[Reseal]) -> int:
        """Conditional Updates of the entry items, no meta write: version, ids and times
        stay. An entry is rewritten only while its item holds the old bytes (first piece and
        token: parts are written once per token) in the session's ledger; a split entry's
        new parts go under a new token in the same transaction, the old ones after it.
        Transactions of up to 100 entries: each is atomic, a cut-short run is finished by
        running it again (what is resealed no longer holds the old bytes)."""
        done = 0
        for _ in range(races.RACES):
            state = self._live(self._meta(session), self.options.clock())
            if state is None:
                return done
            wanted = {seq: (old, new) for seq, old, new in entries
                      if state.first_seq <= seq <= state.version}
            got = self._get_many(session, [entry_key(s) for s in wanted])
            items = [item for item in got if item["ledger"]["S"] == state.ledger]
            blobs = dict(self._joined(session, items))
            if len(blobs) < len(items):
                continue  # a part went with a trim or delete since: read again
            rewrites = [self._resealed(session, item, wanted[seq][1])
                        for item in items
                        if blobs[seq := seq_of(item["sk"]["S"])] == wanted[seq][0]]
            written, whole = self._rewrite(session, rewrites)
            done += written
            if whole:
                return done
        raise races.kept_changing(self._where, session)

    def _rewrite(self, session: str, rewrites: list[Group]) -> tuple[int, bool]:
        """Write the rewrites a transaction at a time: how many entries were rewritten,
        and whether all were (False: a transaction was refused, read again)."""
        written = 0
        for chunk in whole_groups(rewrites):
            if self._transact([op for ops, _ in chunk for op in ops]) is not None:
                return written, False
            written += len(chunk)
            for _, (tok, stale) in chunk:
                self._delete_items(session, stale, "tok", tok)
        return written, True

    def _resealed(self, session: str, item: dict[str, Any], new: bytes) -> Group:
        """The operations that rewrite one entry, and its old token and parts to delete."""
        seq = seq_of(item["sk"]["S"])
        if len(new) > TX_BYTES - INLINE:
            raise BackendError(
                f"dynamodb {self._where}: entry {seq} of session {session!r} sealed again is "
                f"{len(new)} bytes, more than one transaction rewrites ({TX_BYTES - INLINE})")
        old_tok = item["tok"]["S"]
        split = pieces(new)
        renamed = len(split) > 1 or "parts" in item
        tok = hashlib.sha256(old_tok.encode() + new).hexdigest()[:24] if renamed else old_tok
        update = {"Update": {
            "TableName": self.table, "Key": self.items.key(session, item["sk"]["S"]),
            "UpdateExpression": "SET b = :b, tok = :tok" + (
                ", parts = :parts" if len(split) > 1 else " REMOVE parts"),
            "ConditionExpression": "ledger = :ledger AND b = :old AND tok = :oldtok",
            "ExpressionAttributeValues": {
                ":b": {"B": split[0]}, ":tok": {"S": tok}, ":ledger": item["ledger"],
                ":old": item["b"], ":oldtok": {"S": old_tok},
                **({":parts": number(len(split) - 1)} if len(split) > 1 else {})}}}
        puts = [{"Put": {"TableName": self.table, "Item": {
            **self.items.key(session, part_key(tok, seq, k)), "ledger": item["ledger"],
            "tok": {"S": tok}, "b": {"B": piece}}}} for k, piece in enumerate(split[1:], 1)]
        stale = _with_parts([item])[1:] if renamed else []
        return [update, *puts], (old_tok, stale)


def _with_parts(items: list[dict[str, Any]]) -> list[str]:
    """The sort keys of ``items`` and of their parts."""
    keys = []
    for item in items:
        keys.append(item["sk"]["S"])
        for k in range(1, int(item.get("parts", {"N": "0"})["N"]) + 1):
            keys.append(part_key(item["tok"]["S"], seq_of(item["sk"]["S"]), k))
    return keys
