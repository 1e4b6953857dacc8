# Generated from src/chatledger/_backends/dynamodb/_async/backend.py by scripts/unasync.py: edit that file, not this one.
"""``dynamodb://``: the ten promises on DynamoDB, through aiobotocore (and boto3).

The source of ``_sync/backend.py``: the backend's logic is written once, here;
its requests go through a seam, :class:`..io.DynamoClient`
(aiobotocore, on the event loop: no worker threads), whose sync twin
:class:`..io.DynamoClient` (boto3) the generated module calls.

The table's layout is in :mod:`..layout`: a partition per session,
an item per message, an item per message id, a meta item with the state.

An append reads the meta item (a consistent ``GetItem``) and writes with one
``TransactWriteItems``: the meta item updated on the condition that its
version and ledger are still the ones read (or, for a new session, that it
does not exist), each entry put, and each id item put on the condition that
the id is not stored in this ledger. Two writers can therefore never both
succeed, and a retry of a stored batch fails the id conditions, which sends
it to the lookup that answers with its original Ack. A writer whose meta
condition failed lost a race: it reads again and tries again. Such races are
between processes (or stores): one backend's own appends to a session take
turns, in order of arrival, rather than race each other.

A batch one transaction cannot hold (100 items, 4 MB) or a message over the
item limit (400 KB) takes the slow path: a lease on the meta item (a
conditional write, ``lease_until`` 30 s ahead), then its items in as many
transactions as needed, each fenced by a condition that the lease is still
its own, then one conditional write of the meta item that commits the whole
batch at once and drops the lease. Readers read only up to the committed
version, so they never see part of a batch; a writer that meets an expired
lease takes it over and deletes what the dead attempt left. An entry over the
item limit is stored in parts (``p`` items) that its entry item counts.

Reads: the meta item, then one ``Query`` of exactly the window's sort keys
(``Limit`` capped at the window and at 1,000 a page); a window that changed
in between (a concurrent trim or delete) is read again.

Everything is in the store's clock, except the leases (real time: they
bound a real writer). botocore's retries are off; throttling, transaction
conflicts and server errors are BackendUnavailable, retried by the store
with the same message ids.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import time
from contextlib import suppress
from dataclasses import replace
from typing import Any

from ...._checks import Check
from ...._deadline import time_left
from ...._errors import (
    BackendError,
    BackendUnavailable,
    ChatLedgerError,
    ConflictError,
    MemoryLostError,
    SessionUserError,
)
from ...._options import StoreOptions
from ...._results import Ack
from ...._url import StoreURL
from ..._sync.base import Backend
from ...contract import (
    EMPTY,
    Batch,
    HeadPage,
    RawHistory,
    RawInfo,
    ReadQuery,
    Reseal,
    SessionPage,
    StoredId,
    plan_append,
    trim_cut,
)
from ...registry import builtin_schemes
from ...turns import Turns
from .. import layout
from ..io import DynamoClient
from ..checks import round_trip, table_checks, unreachable
from ..io import RETRIABLE_REASONS, Cancelled, dynamo_settings, table_spec
from ..layout import (
    INDEX,
    META,
    TTL_ATTRIBUTE,
    USER,
    Meta,
    entry_key,
    id_key,
    meta_from_item,
    number,
    part_key,
    partition,
    seq_of,
    user_partition,
)

__all__ = ["DynamoDBBackend"]

INLINE = 350_000  # bytes of an entry kept in its own item; the rest goes to parts
_TX_ITEMS = 100
_TX_BYTES = 3_500_000  # under the 4 MB of a transaction, with room for keys and names
_ITEM_OVERHEAD = 300  # bytes of keys and attribute names an item adds, generously
_QUERY_PAGE = 1_000  # the largest Limit a windowed read asks for
_TABLE_WAITS = 120  # seconds a new table may take to become ACTIVE
LEASE_SECONDS = 30.0
_LISTED = ("sk", "ledger", "tok", "parts", "ver", "first", "created", "updated", "exp",
           "lease", "lease_until", "sid", USER)
_RACES = 100  # lost meta races before an append gives up (BackendUnavailable)
_REREADS = 5
_NEWEST = ReadQuery(last=1)


class _Lost(Exception):
    """The meta item changed since it was read: ``meta`` is it now, when DynamoDB said."""

    def __init__(self, meta: object = None) -> None:
        super().__init__()
        self.meta = meta


class _Stale(Exception):
    """The remembered meta item would refuse the append: read the real one first."""


_UNKNOWN = object()  # no meta item remembered for the session
_REMEMBERED = 4096  # sessions whose meta item a backend remembers


class DynamoDBBackend(Backend):
    """Conditional writes and transactions keep the rules."""

    schemes = builtin_schemes(__name__)
    supports_users = True

    def __init__(self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]) -> None:
        super().__init__(url, options, extra)
        self.settings = dynamo_settings(url, options, extra)
        self.table = self.settings.table
        self._where = url.redacted()
        self.io = DynamoClient(self.settings, self._where)
        # The meta item of each session as this backend last wrote or saw it: an
        # append tries it first (one request, not two); the transaction's
        # conditions make a stale guess fail, and the failure returns the item.
        self._known: dict[str, object] = {}
        # This backend's appends to a session wait their turn rather than race each other
        # through DynamoDB (Turns says why): only other processes' writers race.
        self._turns = Turns()
        self.created = False  # whether open() created the table (create=true)

    # -- I/O ------------------------------------------------------------------

    def _call(self, operation: str, **kwargs: Any) -> Any:
        return self.io.call(operation, **kwargs)

    def _key(self, session: str, sort_key: str) -> dict[str, Any]:
        return {"pk": {"S": partition(self.options.namespace, session)}, "sk": {"S": sort_key}}

    def _meta(self, session: str) -> Meta | None:
        reply = self._call("get_item", TableName=self.table, Key=self._key(session, META),
                                 ConsistentRead=True)
        item = reply.get("Item")
        return None if item is None else meta_from_item(item)

    def _live(self, meta: Meta | None, now: float) -> RawInfo | None:
        if meta is None or not meta.committed or meta.info.expired(now):
            return None
        return meta.info

    def _transact(self, items: list[dict[str, Any]]) -> None:
        """One transaction; _Lost when its first item's condition failed, _IdsStored when
        another's did."""
        try:
            self._call("transact_write_items", TransactItems=items)
        except Cancelled as cancelled:
            _cancelled(cancelled.reasons, self._where)

    def _remembered(self, session: str) -> object:
        return self._known.get(session, _UNKNOWN)

    def _remember(self, session: str, meta: object) -> None:
        self._known.pop(session, None)
        if meta is not _UNKNOWN:
            self._known[session] = meta
            if len(self._known) > _REMEMBERED:
                self._known.pop(next(iter(self._known)))

    # -- append ----------------------------------------------------------------

    def append(self, session: str, batch: Batch) -> Ack:
        with self._turns.of(session, f"dynamodb {self._where}"):
            return self._race(session, batch)

    def _race(self, session: str, batch: Batch) -> Ack:
        """Append, reading again and retrying as long as other writers win the meta item."""
        meta, fresh = self._remembered(session), False
        for attempt in range(_RACES):
            if meta is _UNKNOWN:
                meta, fresh = self._meta(session), True
            started = time.monotonic()
            try:
                ack, meta = self._append_once(session, batch, meta, fresh)  # type: ignore[arg-type]
            except _Stale:
                meta = _UNKNOWN
                continue
            except _Lost as lost:  # another writer won: its meta item, if DynamoDB returned it
                meta, fresh = lost.meta, lost.meta is not _UNKNOWN
                self._remember(session, _UNKNOWN)
                time.sleep(self._backoff(session, time.monotonic() - started, attempt))
                continue
            except Exception:
                self._remember(session, _UNKNOWN)
                raise
            self._remember(session, meta)
            return ack
        raise BackendUnavailable(f"dynamodb {self._where}: session {session!r} changed "
                                 f"under {_RACES} attempts in a row")

    def _backoff(self, session: str, spent: float, attempt: int) -> float:
        """The pause after a lost race: at random, in units of the attempt's own round
        trip (``spent``), more after each loss, so that writers of other processes (this
        one's take turns) spread out instead of all failing together again.

        Never past the call's deadline: an async sleep is cancelled there, but the sync
        twin's ``time.sleep`` is not, and a writer losing race after race would overrun
        it; once the deadline has passed, the append is unavailable.
        """
        pause = random.uniform(0, spent * min(2 ** attempt, 16))
        left = time_left()
        if left is None:
            return pause
        if left <= 0:
            raise BackendUnavailable(
                f"dynamodb {self._where}: the call's deadline (retry.deadline) passed while "
                f"other writers kept changing session {session!r} first; nothing of this "
                "append was committed: appending the same messages again is safe")
        return min(pause, left)

    def _append_once(self, session: str, batch: Batch, meta: Meta | None,
                           fresh: bool) -> tuple[Ack, object]:
        """Append once from ``meta``; the Ack and the meta item after it.

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
            raise _Stale()  # only a meta item just read may refuse, or replace an expired one
        if meta is not None and meta.lease is not None and meta.lease != _token(batch, meta):
            self._settle_lease(session, meta)
            raise _Lost(_UNKNOWN)
        found: dict[str, StoredId] = {}
        if state is not None and (refused or _large(batch)):
            found = self._stored_ids(session, batch.ids, state)
        plan = plan_append(session, batch, state, found, now=now, expires=expires)
        if isinstance(plan, Ack):
            return plan, meta
        grown = plan.state
        if _large(batch):
            self._append_large(session, meta, state, grown, batch)
        else:
            try:
                self._transact([
                    self._meta_write(session, meta, state, grown, now=now),
                    *self._message_items(session, plan.first_seq, grown.ledger, batch, "",
                                         conditional=True),
                    *self._indexed(session, state, grown)])
            except _IdsStored:
                if state is None:  # a new ledger's ids are new: the meta item moved on
                    raise _Lost(_UNKNOWN) from None
                stored = self._stored_ids(session, batch.ids, state)
                again = plan_append(session, batch, state, stored, now=now, expires=expires)
                if not isinstance(again, Ack):
                    raise _Lost(_UNKNOWN) from None
                return again, meta
        return plan.ack, Meta(grown)

    def _meta_write(self, session: str, meta: Meta | None, state: RawInfo | None,
                    grown: RawInfo, *, lease: str | None = None,
                    now: float | None = None) -> dict[str, Any]:
        """Write the grown state, on the condition that the meta item is as read.

        A failed condition returns the item as it is (``ALL_OLD``): the next try
        starts from it without reading it again.
        """
        if state is None:  # a new ledger: replace whatever expired or was abandoned
            op: dict[str, Any] = {"Item": {**self._key(session, META),
                                           **self._meta_attributes(session, grown)},
                                  **_unchanged_or_absent(meta, now),
                                  "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
            return {"Put": {"TableName": self.table, **op}}
        sets = ["ver = :ver", "updated = :updated"]
        values: dict[str, Any] = {":ver": number(grown.version),
                                  ":updated": number(grown.updated_at),
                                  ":v": number(state.version), ":ledger": {"S": state.ledger}}
        condition = "ver = :v AND ledger = :ledger AND "
        if lease is None:
            condition += "attribute_not_exists(lease)"
        else:
            condition += "lease = :lease"
            values[":lease"] = {"S": lease}
        removes = ["lease", "lease_until"]
        if grown.expires_at is None:
            removes.append(TTL_ATTRIBUTE)
        else:
            sets.append(f"{TTL_ATTRIBUTE} = :exp")
            values[":exp"] = number(grown.expires_at)
        return {"Update": {
            "TableName": self.table, "Key": self._key(session, META),
            "UpdateExpression": f"SET {', '.join(sets)} REMOVE {', '.join(removes)}",
            "ConditionExpression": condition, "ExpressionAttributeValues": values,
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}}

    def _meta_attributes(self, session: str, state: RawInfo) -> dict[str, Any]:
        attributes = {"ver": number(state.version), "first": number(state.first_seq),
                      "created": number(state.created_at), "updated": number(state.updated_at),
                      "ledger": {"S": state.ledger}, "ns": {"S": self.options.namespace},
                      "sid": {"S": session}}
        if state.expires_at is not None:
            attributes[TTL_ATTRIBUTE] = number(state.expires_at)
        if state.user is not None:
            attributes[USER] = {"S": state.user}
        return attributes

    def _user_key(self, user: str, session: str) -> dict[str, Any]:
        """The user index's item of ``session``."""
        return {"pk": {"S": user_partition(self.options.namespace, user)},
                "sk": {"S": session}}

    def _indexed(self, session: str, state: RawInfo | None,
                 grown: RawInfo) -> list[dict[str, Any]]:
        """The Put of a new tagged session's index item, in the transaction creating it."""
        if state is not None or grown.user is None:
            return []
        return [{"Put": {"TableName": self.table, "Item": self._user_key(grown.user, session)}}]

    def _message_items(self, session: str, first_seq: int, ledger: str, batch: Batch,
                       tok: str, *, conditional: bool) -> list[dict[str, Any]]:
        """Puts of the batch's entries, their parts and their id items."""
        last = first_seq + len(batch.ids) - 1
        puts: list[dict[str, Any]] = []
        for seq, message_id, blob in zip(itertools.count(first_seq), batch.ids, batch.blobs):
            mid = message_id.encode("utf-8", "surrogatepass")
            pieces = [blob[i:i + INLINE] for i in range(0, len(blob), INLINE)] or [b""]
            common = {"ledger": {"S": ledger}, "tok": {"S": tok}}
            entry = {**self._key(session, entry_key(seq)), **common, "b": {"B": pieces[0]},
                     "mid": {"B": mid}}
            if len(pieces) > 1:
                entry["parts"] = number(len(pieces) - 1)
            puts.append({"Put": {"TableName": self.table, "Item": entry}})
            for index, piece in enumerate(pieces[1:], 1):
                puts.append({"Put": {"TableName": self.table, "Item": {
                    **self._key(session, part_key(tok, seq, index)), **common,
                    "b": {"B": piece}}}})
            id_item = {**self._key(session, id_key(mid)), **common, "mid": {"B": mid},
                       "seq": number(seq), "bf": number(first_seq), "bl": number(last)}
            put: dict[str, Any] = {"TableName": self.table, "Item": id_item}
            if conditional:
                put["ConditionExpression"] = "attribute_not_exists(pk) OR ledger <> :ledger"
                put["ExpressionAttributeValues"] = {":ledger": {"S": ledger}}
            puts.append({"Put": put})
        return puts

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

    def _get_many(self, session: str, sort_keys: list[str]) -> list[dict[str, Any]]:
        """The items of ``sort_keys`` that exist in the session's partition."""
        return self._batch_get([self._key(session, sk) for sk in dict.fromkeys(sort_keys)])

    def _batch_get(self, keys: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The items of ``keys`` that exist, in any partitions (consistent
        ``BatchGetItem``, 100 a request)."""
        items: list[dict[str, Any]] = []
        pending = keys
        while pending:
            chunk, pending = pending[:100], pending[100:]
            request = {self.table: {"Keys": chunk, "ConsistentRead": True}}
            while request:
                reply = self._call("batch_get_item", RequestItems=request)
                items.extend(reply.get("Responses", {}).get(self.table, []))
                request = reply.get("UnprocessedKeys") or {}
        return items

    # -- the large path: a lease, fenced transactions, one commit ----------------

    def _append_large(self, session: str, meta: Meta | None, state: RawInfo | None,
                            grown: RawInfo, batch: Batch) -> None:
        version = state.version if state else 0
        tok = _token(batch, meta) if meta is not None and meta.lease else _fresh_token(
            batch, version, grown.ledger)
        if meta is None or meta.lease != tok:
            self._take_lease(session, meta, state, grown, tok)
        fence = {"ConditionCheck": {
            "TableName": self.table, "Key": self._key(session, META),
            "ConditionExpression": "lease = :lease",
            "ExpressionAttributeValues": {":lease": {"S": tok}}}}
        puts = self._message_items(session, version + 1, grown.ledger, batch, tok,
                                   conditional=False)
        for chunk in _chunks(puts):
            self._transact([fence, *chunk])
        # The index item again, a no-op Put after the placeholder's (_take_lease); it covers
        # a placeholder put by a build that indexed a large append only here, at its commit.
        self._transact([self._commit_write(session, state, grown, tok),
                              *self._indexed(session, state, grown)])

    def _take_lease(self, session: str, meta: Meta | None, state: RawInfo | None,
                          grown: RawInfo, tok: str) -> None:
        until = {":lease": {"S": tok}, ":until": number(time.time() + LEASE_SECONDS)}
        if state is not None:
            self._transact([{"Update": {
                "TableName": self.table, "Key": self._key(session, META),
                "UpdateExpression": "SET lease = :lease, lease_until = :until",
                "ConditionExpression": "ver = :v AND ledger = :ledger AND "
                                       "attribute_not_exists(lease)",
                "ExpressionAttributeValues": {**until, ":v": number(state.version),
                                              ":ledger": {"S": state.ledger}}}}])
            return
        placeholder = {**self._key(session, META), "ver": number(0), "first": number(1),
                       "created": number(grown.created_at), "updated": number(grown.updated_at),
                       "ledger": {"S": grown.ledger}, "lease": until[":lease"],
                       "lease_until": until[":until"],
                       **({USER: {"S": grown.user}} if grown.user is not None else {})}
        # The index item goes with the placeholder, not only with the commit: from here
        # on the table holds the user's messages (the chunks), and forget_user finds a
        # session through the index alone. It deletes the placeholder, which fences the
        # chunks still to come out, and what landed; a dead writer's is found the same way.
        self._transact([{"Put": {"TableName": self.table, "Item": placeholder,
                                       **_unchanged_or_absent(meta)}},
                              *self._indexed(session, state, grown)])

    def _commit_write(self, session: str, state: RawInfo | None, grown: RawInfo,
                      tok: str) -> dict[str, Any]:
        if state is not None:
            return self._meta_write(session, None, state, grown, lease=tok)
        return {"Put": {"TableName": self.table,
                        "Item": {**self._key(session, META),
                                 **self._meta_attributes(session, grown)},
                        "ConditionExpression": "lease = :lease",
                        "ExpressionAttributeValues": {":lease": {"S": tok}}}}

    def _settle_lease(self, session: str, meta: Meta) -> None:
        """Wait for a live lease (BackendUnavailable); take over an expired one and clean up."""
        if meta.lease_until > time.time():
            raise BackendUnavailable(f"dynamodb {self._where}: a large append to session "
                                     f"{session!r} is being written; retry")
        dead, mine = meta.lease, f"{meta.lease}~{time.time()}"
        assert dead is not None
        values = {":dead": {"S": dead}, ":v": number(meta.info.version)}
        self._transact([{"Update": {
            "TableName": self.table, "Key": self._key(session, META),
            "UpdateExpression": "SET lease = :mine", "ConditionExpression":
                "lease = :dead AND ver = :v",
            "ExpressionAttributeValues": {**values, ":mine": {"S": mine}}}}])
        self._delete_leftovers(session, meta.info.version, dead)
        release: dict[str, Any] = {"TableName": self.table, "Key": self._key(session, META),
                                   "ConditionExpression": "lease = :mine",
                                   "ExpressionAttributeValues": {":mine": {"S": mine}}}
        if meta.committed:
            release["UpdateExpression"] = "REMOVE lease, lease_until"
            self._transact([{"Update": release}])
        else:
            self._transact([{"Delete": release}])

    def _delete_leftovers(self, session: str, version: int, tok: str) -> None:
        """Delete what the append of lease ``tok`` wrote: entries, parts, ids above ``version``."""
        above = self._query(session, "sk BETWEEN :low AND :high",
                                  {":low": {"S": entry_key(version + 1)},
                             ":high": {"S": entry_key(10 ** 20 - 1)}})
        parts = self._query(session, "begins_with(sk, :p)", {":p": {"S": f"p{tok}/"}})
        doomed = [item for item in above if item.get("tok", {}).get("S") == tok]
        keys = [item["sk"]["S"] for item in doomed + parts]
        keys += [id_key(item["mid"]["B"]) for item in doomed]
        self._delete_items(session, keys, "tok", tok)

    # -- reads -----------------------------------------------------------------

    def read(self, session: str, query: ReadQuery) -> RawHistory:
        return self._read(session, query, touch=self.options.touch_on_read)

    def _read(self, session: str, query: ReadQuery, *, touch: bool) -> RawHistory:
        for _ in range(_REREADS):
            now = self.options.clock()
            state = self._live(self._meta(session), now)
            if state is None:
                return EMPTY
            if touch and self.options.ttl is not None:
                state = self._touch(session, state, now)
                if state is None:
                    continue
            low, count = query.window(state.version, state.first_seq)
            high = state.version if count is None else min(state.version, low + count - 1)
            entries = self._window(session, state.ledger, low, high)
            if entries is not None:
                return RawHistory(entries, state.version, state.first_seq, state.ledger)
        raise BackendUnavailable(f"dynamodb {self._where}: session {session!r} changed during "
                                 f"{_REREADS} reads in a row")

    def _touch(self, session: str, state: RawInfo, now: float) -> RawInfo | None:
        expires = self.options.expiry(now)
        try:
            self._transact([{"Update": {
                "TableName": self.table, "Key": self._key(session, META),
                "UpdateExpression": f"SET {TTL_ATTRIBUTE} = :exp",
                "ConditionExpression": "ledger = :ledger AND ver = :v",
                "ExpressionAttributeValues": {":exp": number(expires or 0),
                                              ":ledger": {"S": state.ledger},
                                              ":v": number(state.version)}}}])
        except _Lost:
            return None
        return replace(state, expires_at=expires)

    def _window(self, session: str, ledger: str, low: int,
                      high: int) -> list[tuple[int, bytes]] | None:
        """Entries ``low..high`` of ``ledger``; None when some are missing (read again)."""
        if high < low:
            return []
        items = self._query(session, "sk BETWEEN :low AND :high",
                                  {":low": {"S": entry_key(low)}, ":high": {"S": entry_key(high)}},
                                  limit=high - low + 1)
        seqs = [seq_of(item["sk"]["S"]) for item in items]
        if seqs != list(range(low, high + 1)) or any(
                item["ledger"]["S"] != ledger for item in items):
            return None
        blobs = self._joined(session, items)
        return None if blobs is None else list(zip(seqs, blobs, strict=True))

    def _joined(self, session: str, items: list[dict[str, Any]]) -> list[bytes] | None:
        """Each entry's bytes, its parts appended; None when a part is missing."""
        wanted = [part_key(item["tok"]["S"], seq_of(item["sk"]["S"]), k)
                  for item in items if "parts" in item
                  for k in range(1, int(item["parts"]["N"]) + 1)]
        parts = {part["sk"]["S"]: bytes(part["b"]["B"])
                 for part in self._get_many(session, wanted)} if wanted else {}
        if len(parts) < len(wanted):
            return None
        blobs = []
        for item in items:
            blob = bytes(item["b"]["B"])
            for k in range(1, int(item.get("parts", {"N": "0"})["N"]) + 1):
                blob += parts[part_key(item["tok"]["S"], seq_of(item["sk"]["S"]), k)]
            blobs.append(blob)
        return blobs

    def _query(self, session: str, condition: str, values: dict[str, Any], *,
                     limit: int | None = None, keys_only: bool = False) -> list[dict[str, Any]]:
        """Every item of the session's partition that ``condition`` selects, page by page."""
        request: dict[str, Any] = {
            "TableName": self.table, "ConsistentRead": True,
            "KeyConditionExpression": f"pk = :pk AND {condition}",
            "ExpressionAttributeValues": {
                ":pk": {"S": partition(self.options.namespace, session)}, **values}}
        if keys_only:  # what deleting needs, and a meta item's state: never the entries' bytes
            request["ProjectionExpression"] = ", ".join(f"#{name}" for name in _LISTED)
            request["ExpressionAttributeNames"] = {f"#{name}": name for name in _LISTED}
        items: list[dict[str, Any]] = []
        while True:
            if limit is not None:  # never more than the window: a huge last= asks for what exists
                request["Limit"] = min(limit - len(items), _QUERY_PAGE)
            reply = self._call("query", **request)
            items.extend(reply.get("Items", []))
            start = reply.get("LastEvaluatedKey")
            if start is None or (limit is not None and len(items) >= limit):
                return items
            request["ExclusiveStartKey"] = start

    def info(self, session: str) -> RawInfo | None:
        return self._live(self._meta(session), self.options.clock())

    # -- trim, delete, sessions, purge ---------------------------------------------

    def trim(self, session: str, keep_last: int, through_seq: int | None = None) -> int:
        self._remember(session, _UNKNOWN)
        for _ in range(_RACES):
            state = self._live(self._meta(session), self.options.clock())
            if state is None:
                return 0
            cut = trim_cut(state.first_seq, state.version, keep_last, through_seq)
            if cut == state.first_seq:
                return 0
            try:
                self._transact([{"Update": {
                    "TableName": self.table, "Key": self._key(session, META),
                    "UpdateExpression": "SET #first = :cut",
                    "ConditionExpression": "ledger = :ledger AND #first = :first",
                    "ExpressionAttributeNames": {"#first": "first"},
                    "ExpressionAttributeValues": {":cut": number(cut),
                                                  ":ledger": {"S": state.ledger},
                                                  ":first": number(state.first_seq)}}}])
            except _Lost:
                continue
            gone = self._query(session, "sk BETWEEN :low AND :high",
                                     {":low": {"S": entry_key(state.first_seq)},
                                ":high": {"S": entry_key(cut - 1)}}, keys_only=True)
            self._delete_items(session, _with_parts(gone), "ledger", state.ledger)
            return cut - state.first_seq
        raise BackendUnavailable(f"dynamodb {self._where}: session {session!r} kept changing")

    # -- reseal (key rotation) -----------------------------------------------------

    def reseal(self, session: str, entries: list[Reseal]) -> int:
        """Conditional Updates of the entry items, no meta write: version, ids and times
        stay. An entry is rewritten only while its item holds the old bytes (first piece and
        token: parts are written once per token) in the session's ledger; a split entry's
        new parts go under a new token in the same transaction, the old ones after it.
        Transactions of up to 100 entries: each is atomic, a cut-short run is finished by
        running it again (what is resealed no longer holds the old bytes)."""
        done = 0
        for _ in range(_RACES):
            state = self._live(self._meta(session), self.options.clock())
            if state is None:
                return done
            wanted = {seq: (old, new) for seq, old, new in entries
                      if state.first_seq <= seq <= state.version}
            got = self._get_many(session, [entry_key(s) for s in wanted])
            items = [item for item in got if item["ledger"]["S"] == state.ledger]
            blobs = self._joined(session, items)
            if blobs is None:
                continue  # a part went with a trim or delete since: read again
            rewrites = [self._resealed(session, item, wanted[seq_of(item["sk"]["S"])][1])
                        for item, blob in zip(items, blobs, strict=True)
                        if blob == wanted[seq_of(item["sk"]["S"])][0]]
            try:
                for chunk in _whole_groups(rewrites):
                    self._transact([op for ops, _ in chunk for op in ops])
                    done += len(chunk)
                    for _, (tok, stale) in chunk:
                        self._delete_items(session, stale, "tok", tok)
            except (_Lost, _IdsStored):
                continue
            return done
        raise BackendUnavailable(f"dynamodb {self._where}: session {session!r} kept changing")

    def _resealed(self, session: str, item: dict[str, Any],
                  new: bytes) -> tuple[list[dict[str, Any]], tuple[str, list[str]]]:
        """The operations that rewrite one entry, and its old token and parts to delete."""
        seq = seq_of(item["sk"]["S"])
        if len(new) > _TX_BYTES - INLINE:
            raise BackendError(
                f"dynamodb {self._where}: entry {seq} of session {session!r} sealed again is "
                f"{len(new)} bytes, more than one transaction rewrites ({_TX_BYTES - INLINE})")
        old_tok = item["tok"]["S"]
        pieces = [new[i:i + INLINE] for i in range(0, len(new), INLINE)] or [b""]
        split = len(pieces) > 1 or "parts" in item
        tok = hashlib.sha256(old_tok.encode() + new).hexdigest()[:24] if split else old_tok
        update = {"Update": {
            "TableName": self.table, "Key": self._key(session, item["sk"]["S"]),
            "UpdateExpression": "SET b = :b, tok = :tok" + (
                ", parts = :parts" if len(pieces) > 1 else " REMOVE parts"),
            "ConditionExpression": "ledger = :ledger AND b = :old AND tok = :oldtok",
            "ExpressionAttributeValues": {
                ":b": {"B": pieces[0]}, ":tok": {"S": tok}, ":ledger": item["ledger"],
                ":old": item["b"], ":oldtok": {"S": old_tok},
                **({":parts": number(len(pieces) - 1)} if len(pieces) > 1 else {})}}}
        puts = [{"Put": {"TableName": self.table, "Item": {
            **self._key(session, part_key(tok, seq, k)), "ledger": item["ledger"],
            "tok": {"S": tok}, "b": {"B": piece}}}} for k, piece in enumerate(pieces[1:], 1)]
        stale = _with_parts([item])[1:] if split else []
        return [update, *puts], (old_tok, stale)

    def delete(self, session: str) -> bool:
        """One Query of the partition, then one transaction that deletes the meta item (on
        the condition that its ledger is the one read) and up to 99 of the ledger's items
        with it, then a second Query for the rest (see :meth:`_drop`).

        A tagged session's index item stays: it names a session that is gone, which
        ``forget_user`` tells apart (and it finds what a delete cut short left)."""
        self._remember(session, _UNKNOWN)
        for _ in range(_RACES):
            found = self._partition(session)
            meta_item = next((item for item in found if item["sk"]["S"] == META), None)
            if meta_item is None:
                return False
            try:
                return self._drop(session, found, meta_from_item(meta_item))
            except (_Lost, _IdsStored):
                continue
        raise BackendUnavailable(f"dynamodb {self._where}: session {session!r} kept changing")

    def _partition(self, session: str) -> list[dict[str, Any]]:
        """Every item of the session's partition, without the entries' bytes."""
        return self._query(session, "sk >= :low", {":low": {"S": "\x00"}},
                                 keys_only=True)

    def _drop(self, session: str, found: list[dict[str, Any]], meta: Meta) -> bool:
        """Delete the session whose partition held ``found``: its meta item (if still of
        ``meta``'s ledger, else _Lost) and first items in one transaction, then the rest.
        Whether it was live.

        The condition is the ledger, not the version, so that writers appending as fast
        as they can never starve a delete (an erasure racing them): what they appended
        after the Query is found by a second one. None can append after the meta item
        is gone, as every write of a ledger is conditioned on its meta item. A
        placeholder is deleted only while it is one: its commit keeps the ledger, and a
        delete reporting no session must not take a batch acknowledged since (_Lost:
        the next round finds the session)."""
        ledger = meta.info.ledger
        doomed = [item["sk"]["S"] for item in found if item["sk"]["S"] != META
                  and item.get("ledger", {}).get("S") == ledger]
        deletes = self._deletes(session, doomed, "ledger", ledger)
        condition = "ledger = :ledger" + ("" if meta.committed else
                                          " AND attribute_not_exists(sid)")
        self._transact([{"Delete": {
            "TableName": self.table, "Key": self._key(session, META),
            "ConditionExpression": condition,
            "ExpressionAttributeValues": {":ledger": {"S": ledger}}}},
            *deletes[:_TX_ITEMS - 1]])
        gone = set(doomed[:_TX_ITEMS - 1])
        left = [item for item in self._partition(session) if item["sk"]["S"] not in gone]
        # Everything but a new session's (a writer may have started one since): the rest
        # of this ledger, what writers appended to it meanwhile, and older ledgers' items
        # (a session that expired and was written again), which no reader reaches. The
        # new session's ledger is read after the Query, not from it: a Query is no
        # snapshot, and one started meanwhile could show its items but not its meta item.
        self._drop_older(session, left)
        return self._live(meta, self.options.clock()) is not None

    # -- the user index ------------------------------------------------------------

    def user_sessions(self, user: str) -> list[str]:
        """One Query of the user's partition (pages of 1 MB): no Scan."""
        request: dict[str, Any] = {
            "TableName": self.table, "ConsistentRead": True,
            "KeyConditionExpression": "pk = :pk", "ProjectionExpression": "sk",
            "ExpressionAttributeValues": {
                ":pk": {"S": user_partition(self.options.namespace, user)}}}
        sessions: list[str] = []
        while True:
            reply = self._call("query", **request)
            sessions += [item["sk"]["S"] for item in reply.get("Items", [])]
            start = reply.get("LastEvaluatedKey")
            if start is None:
                return sessions
            request["ExclusiveStartKey"] = start

    def forget_session(self, user: str, session: str) -> bool:
        """Delete the session if it is ``user``'s; else what is left in its partition of
        older ledgers (a cut-short delete's, or the user's expired session's under another
        one written over it since, by another user or untagged); then its index item: on
        the condition that no session of the user was created there since (a writer's new
        session keeps its index item, for the next round)."""
        self._remember(session, _UNKNOWN)
        live = False
        for _ in range(_RACES):
            found = self._partition(session)
            meta_item = next((item for item in found if item["sk"]["S"] == META), None)
            try:
                if meta_item is not None and meta_item.get(USER, {}).get("S") == user:
                    live = self._drop(session, found, meta_from_item(meta_item))
                else:  # gone (what a delete cut short left), or another's session now
                    self._drop_older(session, found)
            except (_Lost, _IdsStored):
                continue
            break
        else:
            raise BackendUnavailable(f"dynamodb {self._where}: session {session!r} kept "
                                     "changing")
        with suppress(_Lost):  # a new session of the user's is there: it stays indexed
            self._transact([
                {"ConditionCheck": {
                    "TableName": self.table, "Key": self._key(session, META),
                    "ConditionExpression": "attribute_not_exists(pk) OR "
                                           "attribute_not_exists(#user) OR #user <> :user",
                    "ExpressionAttributeNames": {"#user": USER},
                    "ExpressionAttributeValues": {":user": {"S": user}}}},
                {"Delete": {"TableName": self.table, "Key": self._user_key(user, session)}}])
        return live

    def _drop_older(self, session: str, found: list[dict[str, Any]]) -> None:
        """Delete the items of ``found`` of an older ledger than the session's now, which no
        reader reaches: a deleted ledger's, or what an expired session left under the new
        one written over it (its entries past the new one's length, its id items). The
        meta item is read after the Query: every ledger's meta item is written before its
        items, so a ledger of ``found`` is either the one read then, or older."""
        meta = self._meta(session)
        current = None if meta is None else meta.info.ledger
        self._drop_leftovers(session, [
            item for item in found
            if item["sk"]["S"] != META and item.get("ledger", {}).get("S") != current])

    def _drop_leftovers(self, session: str, found: list[dict[str, Any]]) -> None:
        """Delete the items of ``found`` (of ledgers no meta item names any more), ledger by
        ledger, each on the condition that it is still of its ledger: a new session may be
        starting."""
        ledgers: dict[str, list[str]] = {}
        for item in found:
            ledgers.setdefault(item.get("ledger", {}).get("S", ""), []).append(item["sk"]["S"])
        for ledger, keys in ledgers.items():
            self._delete_items(session, keys, "ledger", ledger)

    def _deletes(self, session: str, sort_keys: list[str], attribute: str,
                 value: str) -> list[dict[str, Any]]:
        condition = {"ConditionExpression": f"{attribute} = :value",
                     "ExpressionAttributeValues": {":value": {"S": value}}}
        return [{"Delete": {"TableName": self.table, "Key": self._key(session, sk),
                            **condition}} for sk in dict.fromkeys(sort_keys)]

    def _delete_items(self, session: str, sort_keys: list[str], attribute: str,
                            value: str) -> None:
        """Delete the items whose ``attribute`` is still ``value``; others are left."""
        for chunk in _chunks(self._deletes(session, sort_keys, attribute, value)):
            try:
                self._transact(chunk)
            except (_Lost, _IdsStored):  # one was rewritten meanwhile: the others one by one
                for delete in chunk:
                    with suppress(_Lost):
                        self._transact([delete])

    def list_sessions(self, prefix: str, cursor: str | None) -> SessionPage:
        size = layout.PAGE  # read here: the tests shrink it
        listed = self._index(prefix, cursor, size + 1)
        ids = [sid for sid, exp in listed if exp is None or exp > self.options.clock()]
        page = ids[:size]
        return SessionPage(page, page[-1] if len(ids) > size else None)

    def heads(self, prefix: str, cursor: str | None) -> HeadPage:
        """A page of the index, then its sessions' meta items and the entries they
        name, by ``BatchGetItem`` (100 a request). A session whose entry is split
        in parts, or changed between the two reads, is read on its own."""
        page = self.list_sessions(prefix, cursor)
        now = self.options.clock()
        metas = _by_key(self._batch_get([self._key(s, META) for s in page.ids]))
        states = {}
        for session in page.ids:
            item = metas.get((partition(self.options.namespace, session), META))
            state = self._live(None if item is None else meta_from_item(item), now)
            if state is not None:
                states[session] = state
        entries = _by_key(self._batch_get([
            self._key(session, entry_key(state.version)) for session, state in states.items()
            if state.version >= state.first_seq]))
        heads = []
        for session, state in states.items():
            raw = RawHistory([], state.version, state.first_seq, state.ledger)
            if state.version >= state.first_seq:
                item = entries.get((partition(self.options.namespace, session),
                                    entry_key(state.version)))
                if item is None or "parts" in item or item["ledger"]["S"] != state.ledger:
                    raw = self._read(session, _NEWEST, touch=False)
                else:
                    raw = replace(raw, entries=[(state.version, bytes(item["b"]["B"]))])
            if raw.version:
                heads.append((session, raw))
        return HeadPage(heads, page.cursor)

    def _index(self, prefix: str, after: str | None,
                     count: int | None) -> list[tuple[str, float | None]]:
        """Sessions in id order from the ``sessions`` index: (id, expiry); ``count`` live ones
        at least, when there are that many."""
        low = max(prefix, after + "\x00") if after is not None else prefix
        request: dict[str, Any] = {
            "TableName": self.table, "IndexName": INDEX,
            "KeyConditionExpression": "ns = :ns" + (" AND sid >= :low" if low else ""),
            "ExpressionAttributeValues": {":ns": {"S": self.options.namespace},
                                          **({":low": {"S": low}} if low else {})}}
        found: list[tuple[str, float | None]] = []
        now = self.options.clock()
        while True:
            if count is not None:
                request["Limit"] = count
            reply = self._call("query", **request)
            for item in reply.get("Items", []):
                sid = item["sid"]["S"]
                if not sid.startswith(prefix):
                    return found
                exp = item.get(TTL_ATTRIBUTE)
                found.append((sid, None if exp is None else float(exp["N"])))
            live = sum(1 for _, exp in found if exp is None or exp > now)
            start = reply.get("LastEvaluatedKey")
            if start is None or (count is not None and live >= count):
                return found
            request["ExclusiveStartKey"] = start

    def purge(self, prefix: str) -> int:
        purged = 0
        for sid, _ in self._index(prefix, None, None):
            purged += self.delete(sid)
        return purged

    # -- extras ------------------------------------------------------------------

    def open(self) -> None:
        self.io.client()
        if self.settings.create:
            self.created = self._create_table()

    def _create_table(self) -> bool:
        """Create the table (on-demand, TTL on ``exp``) unless it exists; whether it did."""
        made = self._call("create_table", tolerate="ResourceInUseException",
                                **table_spec(self.table))
        if made is None:
            return False
        for _ in range(_TABLE_WAITS):  # DynamoDB takes seconds to make a table ACTIVE
            described = self._call("describe_table", TableName=self.table)
            if described["Table"].get("TableStatus") == "ACTIVE":
                break
            time.sleep(1.0)
        else:
            raise BackendUnavailable(f"dynamodb {self._where}: the new table is not ACTIVE "
                                     f"after {_TABLE_WAITS} s")
        self._call("update_time_to_live", TableName=self.table, TimeToLiveSpecification={
            "Enabled": True, "AttributeName": TTL_ATTRIBUTE})
        return True

    def close(self) -> None:
        self._known.clear()
        self.io.close()

    def checks(self) -> list[Check]:
        """Status, key schema, TTL, billing, PITR and a round trip; never raises."""
        try:
            described = self._call("describe_table", TableName=self.table)
            ttl = self._call("describe_time_to_live", TableName=self.table)
            backups = self._call("describe_continuous_backups", TableName=self.table)
        except ChatLedgerError as exc:
            return [unreachable(self._where, exc)]
        found = table_checks(described["Table"], ttl["TimeToLiveDescription"],
                             backups["ContinuousBackupsDescription"])
        if any(check.status == "fail" for check in found):
            return found  # a table that is not chatledger's would only refuse a GetItem too
        elapsed: float | Exception
        try:
            started = time.perf_counter()
            self._meta("\x00doctor")
            elapsed = time.perf_counter() - started
        except ChatLedgerError as exc:
            elapsed = exc
        return [*found, round_trip(elapsed)]

    def corrupt_entry(self, session: str, seq: int, blob: bytes) -> None:
        self._call("update_item", TableName=self.table,
                         Key=self._key(session, entry_key(seq)),
                         UpdateExpression="SET b = :b REMOVE parts",
                         ConditionExpression="attribute_exists(pk)",
                         ExpressionAttributeValues={":b": {"B": blob}})


class _IdsStored(Exception):
    """A transaction's id condition failed: some of the batch's ids are stored."""


def _refuses(session: str, batch: Batch, state: RawInfo | None, now: float,
             expires: float | None) -> bool:
    """Whether the plan refuses ``batch`` on ``state`` if none of its ids is stored."""
    try:
        plan_append(session, batch, state, {}, now=now, expires=expires)
    except (ConflictError, MemoryLostError, SessionUserError):
        return True
    return False


def _cancelled(reasons: list[dict[str, Any]], where: str) -> None:
    """Why a transaction was cancelled: a retriable reason, or a condition (which one)."""
    codes = [str(reason.get("Code", "None")) for reason in reasons]
    if any(code in RETRIABLE_REASONS for code in codes):
        raise BackendUnavailable(f"dynamodb {where}: transaction cancelled "
                                 f"({', '.join(sorted(set(codes) & RETRIABLE_REASONS))})")
    failed = [i for i, code in enumerate(codes) if code == "ConditionalCheckFailed"]
    if not failed:
        raise BackendError(f"dynamodb {where}: transaction cancelled: {', '.join(codes)}")
    if failed[0]:
        raise _IdsStored()
    item = reasons[0].get("Item")
    raise _Lost(meta_from_item(item) if item else _UNKNOWN)


def _unchanged_or_absent(meta: Meta | None, now: float | None = None) -> dict[str, Any]:
    """The condition that the meta item is still the one read (or still missing).

    ``now``: the item is replaced because it expired; it must still be expired.
    """
    if meta is None:
        return {"ConditionExpression": "attribute_not_exists(pk)"}
    condition = "ledger = :old AND ver = :oldv AND " + (
        "lease = :oldlease" if meta.lease else "attribute_not_exists(lease)")
    values = {":old": {"S": meta.info.ledger}, ":oldv": number(meta.info.version),
              **({":oldlease": {"S": meta.lease}} if meta.lease else {})}
    if now is not None and meta.committed and meta.info.expires_at is not None:
        condition += f" AND {TTL_ATTRIBUTE} <= :now"
        values[":now"] = number(now)
    return {"ConditionExpression": condition, "ExpressionAttributeValues": values}


def _by_key(items: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    """Items by their (partition key, sort key)."""
    return {(item["pk"]["S"], item["sk"]["S"]): item for item in items}


def _large(batch: Batch) -> bool:
    """Whether the batch needs more than one transaction, or parts."""
    size = sum(len(blob) + 2 * len(i.encode("utf-8", "surrogatepass")) + 2 * _ITEM_OVERHEAD
               for i, blob in zip(batch.ids, batch.blobs, strict=True))
    # the meta item, an entry and an id item per message, a new session's index item
    return (2 * len(batch.ids) + 2 > _TX_ITEMS or size > _TX_BYTES
            or any(len(blob) > INLINE for blob in batch.blobs))


def _item_bytes(op: dict[str, Any]) -> int:
    body = next(iter(op.values()))
    values = [*body.get("Item", {}).values(), *body.get("ExpressionAttributeValues", {}).values()]
    return _ITEM_OVERHEAD + sum(len(v.get("B", b"")) for v in values)


_Group = tuple[list[dict[str, Any]], Any]


def _whole_groups(groups: list[_Group]) -> list[list[_Group]]:
    """Transactions of at most 100 operations and about 3.5 MB, a group never split."""
    chunks: list[list[_Group]] = [[]]
    count = size = 0
    for group in groups:
        cost = sum(_item_bytes(op) for op in group[0])
        if chunks[-1] and (count + len(group[0]) > _TX_ITEMS or size + cost > _TX_BYTES):
            chunks.append([])
            count = size = 0
        chunks[-1].append(group)
        count += len(group[0])
        size += cost
    return [chunk for chunk in chunks if chunk]


def _chunks(ops: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Transactions of at most 99 operations (room for a fence) and about 3.5 MB."""
    chunks: list[list[dict[str, Any]]] = [[]]
    size = 0
    for op in ops:
        cost = _item_bytes(op)
        if len(chunks[-1]) >= _TX_ITEMS - 1 or size + cost > _TX_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append(op)
        size += cost
    return [chunk for chunk in chunks if chunk]


def _with_parts(items: list[dict[str, Any]]) -> list[str]:
    keys = []
    for item in items:
        keys.append(item["sk"]["S"])
        for k in range(1, int(item.get("parts", {"N": "0"})["N"]) + 1):
            keys.append(part_key(item["tok"]["S"], seq_of(item["sk"]["S"]), k))
    return keys


def _fresh_token(batch: Batch, version: int, ledger: str) -> str:
    """The lease of this batch at this version: a retry of it recognises its own lease."""
    digest = hashlib.sha256(f"{ledger}/{version}".encode())
    for message_id in batch.ids:
        digest.update(message_id.encode("utf-8", "surrogatepass") + b"\x00")
    return digest.hexdigest()[:24]


def _token(batch: Batch, meta: Meta | None) -> str:
    if meta is None:
        return ""
    return _fresh_token(batch, meta.info.version, meta.info.ledger)

