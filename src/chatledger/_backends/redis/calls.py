"""Each backend operation as a script call, and its reply as a result; no I/O.

The sync and async backends only send what :class:`Calls` plans and hand the
reply back to the call's ``parse``; everything else about Redis (arguments,
reply shapes, what a reply means) lives here once.

Round trips: each operation on one session (append, read, info, trim,
delete) is one EVALSHA, or one more EVAL after NOSCRIPT (the script did not
run, so resending it is safe). ``list_sessions`` is one or a few SCAN calls;
``purge`` is SCAN plus, per SCAN reply, one pipeline of DELETE scripts, so each
session goes atomically and the count is of sessions that existed. A purge
retried after a failure does not count what its failed attempt removed.

Time: ``created``/``updated`` come from the store's clock, passed to the
script. Expiry is the server's own (PEXPIRE); ``info().expires_at`` is the
deadline the last write recorded by the store's clock, unless PTTL says the
keys expire sooner.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..._errors import BackendError, BackendUnavailable, MemoryLostError
from ..._options import StoreOptions
from ..._results import Ack
from ..contract import (
    EMPTY,
    PAGE,
    Batch,
    HeadPage,
    RawHistory,
    RawInfo,
    ReadQuery,
    Reseal,
    SessionPage,
    StoredId,
    check_expected_version,
    check_user,
    dedupe,
    new_ledger_id,
)
from . import scripts
from .keys import SessionKeys, meta_pattern, session_of, user_index_key
from .scripts import Script

__all__ = ["SCAN_COUNT", "Calls", "NotIndexed", "Replication", "ScriptCall", "SessionScan",
           "head_page"]

T = TypeVar("T")
Arg = bytes | str | int

_NEWEST = ReadQuery(last=1)
SCAN_COUNT = 1000  # SCAN's COUNT hint: keys the server looks at per call
_SCANS_PER_PAGE = 16  # bounds one list_sessions call in a big keyspace; pages may be short


class NotIndexed(Exception):
    """The append would create a tagged session that the user's index does not name yet."""


@dataclass(slots=True)  # not frozen: one is made per call, and frozen fields cost to set
class ScriptCall(Generic[T]):
    """One EVALSHA: the script, its keys and arguments, and how to read its reply.

    ``writes``: the call changes the session, so with ``wait_replicas`` it is
    followed by ``WAIT`` on the same connection.
    """

    script: Script
    keys: tuple[bytes, ...]
    args: tuple[Arg, ...]
    parse: Callable[[Any], T]
    writes: bool = False


@dataclass(frozen=True)
class Replication:
    """How many replicas must confirm a write, and how long WAIT may block for it.

    ``waitaof``: the server has WAITAOF (Redis 7.2+) and writes an AOF, so the
    write must also be fsynced on the master's disk (``WAITAOF 1 0``) before
    ``WAIT`` counts the replicas that have it. Not ``WAITAOF 1 N``: that counts
    only replicas that fsync an AOF of their own, and replicas without one
    would then refuse every write.
    """

    replicas: int = 0
    timeout_ms: int = 0
    waitaof: bool = False

    @property
    def commands(self) -> tuple[tuple[str | int, ...], ...]:
        """What follows the write on its connection, in one round trip."""
        wait = ("WAIT", self.replicas, self.timeout_ms)
        if self.waitaof:
            return (("WAITAOF", 1, 0, self.timeout_ms), wait)
        return (wait,)

    def confirmed(self, replies: list[Any]) -> int:
        """Replicas that confirmed, from the replies to :attr:`commands`: WAIT's
        count, and with WAITAOF only once the write is on the master's disk."""
        if self.waitaof:
            (local, _), count = replies
            return int(count) if int(local) >= 1 else 0
        return int(replies[0])

    def check(self, confirmed: int, where: str) -> None:
        """A short count: the write is stored on the master but maybe lost by a failover."""
        if confirmed < self.replicas:
            raise BackendUnavailable(
                f"redis {where}: {confirmed} of {self.replicas} replicas confirmed the write "
                f"within {self.timeout_ms} ms: it may or may not have been kept (a failover "
                "can lose it); appending the same messages again is safe, their ids store "
                "them at most once"
            )


class Calls:
    """Plans the script calls of one store (its namespace and options)."""

    def __init__(self, options: StoreOptions, replication: Replication | None = None) -> None:
        self.options = options
        self.namespace = options.namespace
        self.replication = replication or Replication()
        self._confirm = int(self.replication.replicas > 0)

    def keys(self, session: str) -> SessionKeys:
        return SessionKeys.of(self.namespace, session)

    def append(self, session: str, batch: Batch, *, indexed: bool = False) -> ScriptCall[Ack]:
        """The append; ``indexed``: the user's index names the session already."""
        expect = -1 if batch.expect_version is None else batch.expect_version
        now = self.options.clock()
        ttl_ms, expires = self._expiry(now)
        # The small arguments in one: the server pays for each argument more
        # than the script pays to parse them. confirm: whether a retry must write
        # too, so that WAIT has something to confirm (WAIT only counts this
        # connection's writes; see the script).
        header = (f"{expect} {ttl_ms} {int(batch.strict)} {len(batch.ids)} {self._confirm} "
                  f"{int(indexed)} {now!r} {batch.new_ledger or new_ledger_id()} {expires}")
        args: tuple[Arg, ...] = (header, batch.ledger or "", batch.user or "",
                                 *map(index_key, batch.ids), *batch.blobs)
        return ScriptCall(scripts.APPEND, self.keys(session).all, args,
                          _AppendReply(session, batch), writes=True)

    def read(self, session: str, query: ReadQuery, *,
             touch: bool = True) -> ScriptCall[RawHistory]:
        """The read; ``touch=False``: never renews the expiry, whatever ``touch_on_read``."""
        touching = touch and self.options.touch_on_read
        touch_args = self._expiry(self.options.clock()) if touching else (0, "")
        last = -1 if query.last is None else query.last
        limit = -1 if query.limit is None else query.limit
        args = (last, query.after, limit, *touch_args)
        return ScriptCall(scripts.READ, self.keys(session).all, args, _read_reply)

    def newest(self, session: str) -> ScriptCall[RawHistory]:
        """The session's newest entry, for ``heads``: never renews its expiry."""
        return self.read(session, _NEWEST, touch=False)

    def info(self, session: str) -> ScriptCall[RawInfo | None]:
        def parse(reply: list[Any] | None) -> RawInfo | None:
            if reply is None:
                return None
            version, first_seq, created, updated, pttl, expires, ledger, *user = reply
            return RawInfo(version, first_seq, float(created), float(updated),
                           self._expires_at(pttl, expires), _text(ledger),
                           _text(user[0]) if user and user[0] is not None else None)

        return ScriptCall(scripts.INFO, self.keys(session).all, (), parse)

    def trim(self, session: str, keep_last: int, through_seq: int | None = None,
             ) -> ScriptCall[int]:
        through = "" if through_seq is None else through_seq  # "": no bound
        return ScriptCall(scripts.TRIM, self.keys(session).all, (keep_last, through), int,
                          writes=True)

    def delete(self, session: str) -> ScriptCall[bool]:
        return ScriptCall(scripts.DELETE, self.keys(session).all, (), bool, writes=True)

    def reseal(self, session: str, entries: list[Reseal]) -> ScriptCall[int]:
        args = (len(entries), *(part for entry in entries for part in entry))
        return ScriptCall(scripts.RESEAL, self.keys(session).all, args, int, writes=True)

    def forget(self, user: str, session: str) -> ScriptCall[bool]:
        return ScriptCall(scripts.FORGET, self.keys(session).all, (user,), bool, writes=True)

    def index_add(self, user: str, session: str) -> ScriptCall[int]:
        return ScriptCall(scripts.INDEX_ADD, (user_index_key(self.namespace, user),),
                          (session,), int, writes=True)

    def index_remove(self, user: str, session: str) -> ScriptCall[int]:
        return ScriptCall(scripts.INDEX_REMOVE, (user_index_key(self.namespace, user),),
                          (session,), int, writes=True)

    def index_members(self, user: str) -> ScriptCall[list[str]]:
        def parse(reply: list[bytes]) -> list[str]:
            return sorted(_text(member) for member in reply)

        return ScriptCall(scripts.INDEX_MEMBERS, (user_index_key(self.namespace, user),), (),
                          parse)

    def scan(self, prefix: str, cursor: str | None) -> SessionScan:
        """Sessions to list: by their meta key, page by page."""
        return SessionScan(self.namespace, prefix, _cursor(cursor))

    def purge_scan(self, prefix: str) -> SessionScan:
        """Sessions to purge: by any of their keys, so what eviction left goes too."""
        return SessionScan(self.namespace, prefix, 0, paged=False, every_key=True)

    def _expiry(self, now: float) -> tuple[int, str]:
        """The TTL as PEXPIRE takes it (0: none) and the deadline by the store's clock."""
        if self.options.ttl is None:
            return 0, ""
        return max(1, round(self.options.ttl * 1000)), repr(now + self.options.ttl)

    def _expires_at(self, pttl: int, recorded: bytes | None) -> float | None:
        """When the session expires, by the store's clock.

        The server expires keys ``ttl`` after it ran the write, a round trip
        after the store's clock said ``now``; the deadline recorded by the write
        (``now + ttl``) is what the caller configured. PTTL wins when it is
        sooner: someone shortened the expiry by hand.
        """
        if pttl < 0:
            return None
        by_server = self.options.clock() + pttl / 1000
        return by_server if recorded is None else min(by_server, float(recorded))


@dataclass
class SessionScan:
    """Sessions found by SCAN over meta keys, one SCAN reply at a time.

    SCAN may return a key more than once (while the server resizes its table):
    ids are deduplicated within one call, not across pages, so a caller paging
    through ``sessions()`` may rarely see an id twice. Expired keys are never
    returned by SCAN.
    """

    namespace: str
    prefix: str
    cursor: int
    paged: bool = True
    every_key: bool = False
    ids: list[str] = field(default_factory=list)
    scans: int = 0
    _seen: set[str] = field(default_factory=set, repr=False)

    @property
    def pattern(self) -> bytes:
        return meta_pattern(self.namespace, self.prefix, every_key=self.every_key)

    @property
    def done(self) -> bool:
        """Whether to stop scanning: the keyspace is done, or (paged) the page is full."""
        if self.scans and self.cursor == 0:
            return True
        return self.paged and (len(self.ids) >= PAGE or self.scans >= _SCANS_PER_PAGE)

    def feed(self, cursor: int, keys: list[bytes]) -> list[str]:
        """Take one SCAN reply; return the sessions it found that were not seen yet."""
        self.cursor, self.scans = int(cursor), self.scans + 1
        found = []
        for key in keys:
            session = session_of(key, self.namespace, self.prefix, every_key=self.every_key)
            if session is not None and session not in self._seen:
                self._seen.add(session)
                found.append(session)
        self.ids.extend(found)
        return found

    def page(self) -> SessionPage:
        return SessionPage(self.ids, None if self.cursor == 0 else str(self.cursor))


def head_page(page: SessionPage, reads: list[RawHistory]) -> HeadPage:
    """The heads of a page of sessions, each read by :meth:`Calls.newest`: those
    still there when read (one may be deleted or expire after the SCAN)."""
    return HeadPage([(session, raw) for session, raw in zip(page.ids, reads, strict=True)
                     if raw.version], page.cursor)


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_PACKED = b"\xff"  # never in UTF-8: a packed id can never equal an id's text


def index_key(message_id: str) -> str | bytes:
    """How the ids hash names a message id.

    The default ids, UUIDs in their canonical lowercase text (36 bytes), as
    0xFF and their 16 bytes: a hash field of 17 bytes takes Redis's 24-byte
    allocation instead of 40, 16 bytes less per message stored. Only the
    canonical form is packed, so two ids never share a field; any other id is
    its own text.
    """
    if len(message_id) == 36 and _UUID.fullmatch(message_id):
        return _PACKED + bytes.fromhex(message_id.replace("-", ""))
    return message_id


def _read_reply(reply: list[Any]) -> RawHistory:
    """The READ script's reply (a function, not a closure: nothing to make per call)."""
    version, first_seq, low, entries, ledger = reply
    if version == 0:
        return EMPTY
    return RawHistory(list(enumerate(entries, low)), version, first_seq, _text(ledger))


class _AppendReply:
    """Reads the APPEND script's reply for its call: one object held while the call
    waits (a partial is two: itself and its arguments' tuple)."""

    __slots__ = ("batch", "session")

    def __init__(self, session: str, batch: Batch) -> None:
        self.session, self.batch = session, batch

    def __call__(self, reply: list[Any]) -> Ack:
        return _append_reply(self.session, self.batch, reply)


def _append_reply(session: str, batch: Batch, reply: list[Any]) -> Ack:
    """The APPEND script's reply: ``ok`` first, the one nearly every call gets."""
    status = reply[0]
    if status == b"ok":
        return Ack(reply[1], reply[2], reply[2], ledger=reply[3].decode())
    if status == b"dup":
        found = {i: _stored_id(place) for i, place in zip(batch.ids, reply[1], strict=True)
                 if place is not None}
        ack = dedupe(batch.ids, found, _text(reply[2]))
        assert ack is not None  # the script only answers "dup" when an id is stored
        return ack
    if status == b"lost":
        raise MemoryLostError(session, 0, int(reply[1]), ledger=batch.ledger,
                              found_ledger=_text(reply[2]) if reply[2] else None)
    if status == b"conflict":
        check_expected_version(session, batch.expect_version, int(reply[1]))
    if status == b"user":
        check_user(session, batch.user, None if reply[1] is None else _text(reply[1]))
    if status == b"unindexed":
        raise NotIndexed(session)
    raise _unexpected("append", reply)


def _text(value: bytes) -> str:
    return value.decode()


def _stored_id(place: bytes) -> StoredId:
    """Parse an ids hash value: "seq:batch_first:batch_last"."""
    try:
        seq, first, last = (int(number) for number in place.split(b":"))
    except ValueError:
        raise BackendError(f"unreadable message id record {place!r}") from None
    return seq, first, last


def _cursor(text: str | None) -> int:
    if text is None:
        return 0
    try:
        cursor = int(text)
    except ValueError:
        raise BackendError(f"{text!r} is not a Redis SCAN cursor") from None
    if cursor < 0:
        raise BackendError(f"{text!r} is not a Redis SCAN cursor")
    return cursor


def _unexpected(operation: str, reply: object) -> BackendError:
    return BackendError(f"unexpected reply to the {operation} script: {reply!r}")
