# Generated from src/chatledger/_async/store.py by scripts/unasync.py: edit that file, not this one.
"""The synchronous store: ``open_store(url)`` and its sessions.

The source of :mod:`chatledger._sync.store`, which ``scripts/unasync.py``
generates from it; all the logic that does no I/O lives once in
:mod:`chatledger._core`.
"""

from __future__ import annotations

from collections.abc import Iterator, Callable, Sequence
from dataclasses import replace
from functools import partial
from types import TracebackType
from typing import Any, TypeVar

from .. import _core, _events, _telemetry
from .._backends import Backend, build_backend
from .._backends.contract import Batch, ReadQuery
from .._context import TokenCounter, Walk, count_with, summary_through
from .._errors import ConfigError, CorruptEntryError, InvalidMessage, MemoryLostError
from .._messages import Message
from .._options import StoreOptions, split_options
from .._results import Ack, ForgetReport, History, RotationReport, SessionInfo
from .._url import parse_url, secret_kept
from .._validation import check_key
from .context import compact, read_fitting, write_summary
from .erasure import forget_user
from .handles import RawAccess
from .retry import call_with_retry
from .rotation import rotate_namespace
from .sealing import append_sealed

__all__ = [
    "Session", "Store", "call_raw", "open_store", "open_store_once",
    "raw_access", "read_each",
]

T = TypeVar("T")


def open_store(url: str = "sqlite:///chatledger.db", **options: Any) -> Store:
    """Open the store at ``url``.

    Every URL and option is described on the documentation's Backends page
    (``docs/backends.md``).

    Args:
        url: ``memory://``, ``sqlite:///path.db``, ``redis://``, ``rediss://``,
            ``unix://``, ``redis+sentinel://``, ``redis+cluster://``,
            ``rediss+cluster://``, ``postgresql://`` (or ``postgres://``) or
            ``dynamodb://TABLE``; options may ride in its query string
            (``sqlite:///a.db?ttl=3600&namespace=bot``).
        **options: the same options as keywords (not both): ``namespace``,
            ``ttl``, ``touch_on_read``, ``max_message_bytes``, ``timeout``,
            ``retry`` (a ``RetryPolicy``, keyword only) or
            ``retry_deadline``, ``clock``, ``encryption`` (a ``Keyring``: entries
            sealed with AES-256-GCM, bound to their place; entries stored in
            the clear are refused unless ``allow_plaintext=True``) and
            ``redact`` (a function applied to each message before it is
            stored), keyword only; ``tracing`` and
            ``prometheus`` (telemetry, off by default: ``docs/observing.md``);
            and the backend's own
            (``synchronous`` on SQLite; ``wait_replicas``, ``max_connections``,
            ... on Redis).

    Returns:
        The store; close it, or use it as a context manager.

    Raises:
        ConfigError: a bad URL or option, an option given twice, or a scheme
            whose driver is not installed (the message names the extra).
    """
    return open_store_once(url, retried=True, **options)


def open_store_once(
    url: str, *, retried: bool = False, **options: Any
) -> Store:
    """``open_store``, opening the backend in one attempt unless ``retried``.

    The command line's: a server that refuses the connection is told at once
    (a typo'd host or port far more often than a server about to come up),
    where a library call retries up to its deadline.
    """
    parsed = parse_url(url)
    with secret_kept(url):
        common, extra = split_options(parsed.query, options)
        backend = build_backend(parsed, common, extra)
    try:
        (call_with_retry(common, backend.open) if retried else backend.open())
    except BaseException:
        backend.close()
        raise
    return Store(backend)


class Store:
    """Sessions of one namespace in one backend; a context manager."""

    def __init__(self, backend: Backend) -> None:
        # Its operations skip the store's validation and retries: chatledger's
        # own tools reach them through raw_access and call_raw, white-box tests here.
        self._backend = backend
        self.options: StoreOptions = backend.options
        self.url = backend.url.redacted()
        # Telemetry asked for by the options (tracing=, prometheus=): listeners of
        # this store's calls only; empty, the calls skip all bookkeeping.
        self._telemetry = _telemetry.listeners(backend.url, backend.options)

    @property
    def namespace(self) -> str:
        return self.options.namespace

    def session(self, session_id: str, *, user: str | None = None) -> Session:
        """A handle on one session; does no I/O.

        Args:
            session_id: the session's id.
            user: the user the session belongs to, for :meth:`forget_user`:
                the session's first append tags it with this user and puts it
                in the namespace's user index. An append through a handle with
                a user raises SessionUserError on a session tagged with another
                user or created without one; a handle without a user appends
                to any session.
        """
        if user is not None:
            check_key(user, "user id")
            self._check_users()
        return Session(self, check_key(session_id, "session id"), user)

    def forget_user(self, user: str, *, dry_run: bool = False) -> ForgetReport:
        """Delete every session, and every LangGraph thread, tagged with ``user``.

        Finds them in the user index (never a scan of the namespace); each
        session is deleted atomically, then removed from the index, so a run
        cut short is finished by running it again. Sessions written with no
        user are not found. See the Security page for what a concurrent writer
        can do and what backups and replicas still hold.

        Args:
            user: the user id the sessions were tagged with.
            dry_run: delete nothing; report what would be deleted.

        Returns:
            The report: the sessions and threads deleted, those already gone,
            and any a concurrent writer kept recreating.
        """
        check_key(user, "user id")
        self._check_users()
        return forget_user(self, user, dry_run=dry_run)

    def rotate_key(self, *, dry_run: bool = False) -> RotationReport:
        """Seal every entry of the namespace with the keyring's current key, in place.

        Entries sealed with an older key of the keyring, and entries stored in
        the clear (whether or not the store allows plaintext), are re-encrypted;
        each keeps its seq, and its session its version, ids and times. Entries
        sealed with the current key are opened too, so a run that ends proves
        the keyring opens every entry of the namespace. Online: appends and reads carry on meanwhile
        (every reader needs a keyring holding the current key). Resumable and
        idempotent: a run cut short and run again re-seals only what is left,
        and a second run rewrites nothing. After a run, the older keys can be
        removed from the keyring.

        Args:
            dry_run: count what would be re-sealed; write nothing.

        Returns:
            What was re-sealed, encrypted, found current or changed meanwhile.

        Raises:
            ConfigError: the store has no keyring.
            EncryptionKeyError: an entry is sealed with a key id the keyring
                does not hold, or does not open with the key under its id (the
                current one included) at its place; the entries before it are
                re-sealed, a run with the right keys finishes the job.
        """
        return rotate_namespace(self, dry_run=dry_run)

    def sessions(self, prefix: str = "") -> Iterator[str]:
        """Ids of live sessions that start literally with ``prefix``, in pages."""
        check_key(prefix, "prefix", empty=True)
        cursor: str | None = None
        while True:
            page = self._call("list_sessions", prefix,
                                    partial(self._backend.list_sessions, prefix, cursor))
            for session_id in page.ids:
                yield session_id
            if page.cursor is None:
                return
            cursor = page.cursor

    def purge(self, prefix: str = "") -> int:
        """Delete every session whose id starts literally with ``prefix``."""
        check_key(prefix, "prefix", empty=True)
        return self._call("purge", prefix, partial(self._backend.purge, prefix))

    def close(self) -> None:
        """Close the store's connections (the context manager does it on exit); a
        store is not used after it."""
        self._backend.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Store {self.url} namespace={self.namespace!r}>"

    def _check_users(self) -> None:
        if not self._backend.supports_users:
            raise ConfigError(f"{self.url} keeps no user index: user= and forget_user are "
                              "not available on this backend")

    def _call(
        self, name: str, target: str, operation: Callable[[], T],
        retry: Callable[[], T] | None = None, sent: int = 0,
    ) -> T:
        """Run ``operation`` with the retry policy; tell event listeners, if any.

        Without listeners (most stores) the retry loop itself is what the caller
        awaits: no frame of this method held for the whole call. Every frame a
        call holds while it waits for its reply is one more object the garbage
        collector walks (benchmarks/RESULTS.md, #32 item 5).
        """
        if not (self._telemetry or _events.active()):
            return call_with_retry(self.options, operation, retry)
        return self._watched_call(name, target, operation, retry, sent)

    def _watched_call(
        self, name: str, target: str, operation: Callable[[], T],
        retry: Callable[[], T] | None, sent: int,
    ) -> T:
        """``_call`` with listeners: the call and each attempt told to them."""
        watch = _events.Watch(self.url, self.namespace, name, target,
                              also=self._telemetry, sent=sent)
        try:
            result = call_with_retry(self.options, _watched(watch, operation),
                                            retry and _watched(watch, retry))
        except Exception as exc:
            watch.ended(error=exc)
            raise
        watch.ended(result=result)
        return result


def _watched(
    watch: _events.Watch, attempt: Callable[[], T]
) -> Callable[[], T]:
    """``attempt``, counted, and noted when it raises: the retries listeners see."""

    def run() -> T:
        watch.attempts += 1
        try:
            return attempt()
        except Exception as exc:
            watch.failed(exc)
            raise

    return run


def raw_access(store: Store) -> RawAccess:
    """The backend under ``store``, for chatledger's own tools: one attempt a call,
    past the store's validation, retries and telemetry."""
    return store._backend


def call_raw(
    store: Store, name: str, target: str,
    operation: Callable[[RawAccess], T],
) -> T:
    """``operation`` on the backend under ``store``, retried and told to listeners
    as the store's own call ``name`` on ``target`` is."""
    return store._call(name, target, partial(operation, store._backend))


def read_each(
    session: Session, *, last: int | None = None, after: int | None = None,
    limit: int | None = None,
) -> tuple[list[Message | CorruptEntryError], int]:
    """The window's messages, an entry that does not decode as its error in its
    place, and the version it was read at: what a tool showing or exporting a
    damaged session reads. The window is read as ``read`` reads it; only when that
    raises at a damaged entry is it read again, decoded entry by entry (a read as
    listeners and retries see it)."""
    try:
        history = session.read(last=last, after=after, limit=limit)
    except CorruptEntryError:
        query = _core.make_query(last, after, limit)
        raw = call_raw(session.store, "read", session.id,
                             lambda backend: backend.read(session.id, query))
        return (_core.decode_each(session.id, raw, session.store.options, query),
                raw.version)
    return list(history.messages), history.version


class Session:
    """One conversation's ledger. Cheap to create; holds no connection.

    A handle remembers the ledger it last saw, so that an append it retries
    after an unanswered attempt lands on that ledger or fails: a server that
    restarted empty in between must not turn the retry into a new ledger.
    """

    def __init__(self, store: Store, session_id: str, user: str | None = None) -> None:
        self.store = store
        self.id = session_id
        self.user = user
        self._backend = store._backend
        self._ledger: str | None = None
        # The version seen with it (None: not seen): where an encrypting store
        # seals the next append for (chatledger._sync.sealing).
        self._version: int | None = None

    def append(
        self, messages: Sequence[Message], *, expect_version: int | None = None,
        ledger: str | None = None,
    ) -> Ack:
        """Store ``messages`` as one atomic batch; safe to retry with the same ids.

        Args:
            messages: the batch, stored whole and contiguous or not at all.
            expect_version: store only if the session is at this version (0: a
                new session).
            ledger: from an Ack, History or SessionInfo: store only if the
                session still has that ledger.

        Returns:
            The batch's seqs and the session's version after it; when every id
            was already stored, the original Ack with ``deduplicated=True``.

        Raises:
            InvalidMessage: a message that could not come back equal, or a batch
                that mixes stored and new ids; nothing is stored.
            ConflictError: the version is not ``expect_version``.
            MemoryLostError: the session's ledger is not ``ledger`` (or, on a
                retry, not the one this handle last saw); nothing is stored.
            SessionUserError: this handle has a user, and the session was
                tagged with another one or with none; nothing is stored.
            BackendUnavailable: the backend failed through every retry, within
                ``retry.deadline``.
        """
        options = self.store.options
        try:
            messages, redacted = _core.redacted(messages, options.redact)
            batch = _core.make_batch(messages, expect_version, ledger, options.max_message_bytes,
                                     self.user)
        except InvalidMessage as exc:
            self._refused(exc)
            raise
        ack = self._stored(batch)
        return replace(ack, redacted=redacted) if redacted else ack

    def _append_own(self, messages: list[Message], *, expect_version: int | None = None,
                          ledger: str | None = None) -> Ack:
        """``append`` for entries chatledger built itself (a checkpointer's): encoded
        without the field-by-field walk (``_validation.encode_own``), whose checks
        their builder makes. With a redact hook, which may change anything, an
        ordinary append."""
        options = self.store.options
        if options.redact is not None:
            return self.append(messages, expect_version=expect_version, ledger=ledger)
        try:
            batch = _core.make_own_batch(messages, expect_version, ledger,
                                         options.max_message_bytes, self.user)
        except InvalidMessage as exc:
            self._refused(exc)
            raise
        return self._stored(batch)

    def _refused(self, exc: InvalidMessage) -> None:
        _events.refused(self.store.url, self.store.namespace, "append", self.id, exc,
                        also=self.store._telemetry)

    def _stored(self, batch: Batch) -> Ack:
        """Store an encoded batch: sealed if the store encrypts, with the retry policy."""
        options = self.store.options
        try:
            if options.encryption is not None:
                ack = append_sealed(self, batch, options.encryption)
            else:
                ack = self.store._call(
                    "append", self.id, _Append(self._backend, self.id, batch, self._ledger),
                    sent=sum(map(len, batch.blobs)) if self.store._telemetry else 0)
        except MemoryLostError as exc:
            self._seen(exc.found_ledger, exc.found)
            raise
        # _seen(), inline: every append passes here
        self._ledger, self._version = ack.ledger, None if ack.deduplicated else ack.version
        return ack

    def _seen(self, ledger: str | None, version: int | None) -> None:
        """Remember the session's ledger and version as a result showed them (a
        deduplicated Ack shows its batch's, not the session's: version None)."""
        self._ledger, self._version = ledger, version

    def read(
        self,
        *,
        last: int | None = None,
        after: int | None = None,
        limit: int | None = None,
        min_version: int | None = None,
        ledger: str | None = None,
        max_tokens: int | None = None,
        count_tokens: Any = None,
        with_summary: bool = False,
    ) -> History:
        """The ``last`` N messages, or those after seq ``after`` (at most ``limit``),
        or the newest that fit ``max_tokens``.

        Args:
            last: the newest ``last`` messages; not with ``after`` or ``limit``.
            after: only the messages with a seq above ``after``.
            limit: at most this many messages, the oldest first. With none of
                ``last``, ``after`` and ``limit``, every message stored.
            min_version: the version the caller knows the session reached.
            ledger: the ledger the caller knows the session has.
            max_tokens: the newest messages whose tokens (with the summary's)
                total at most this; an assistant's tool calls and their results
                are kept or left out together, and a newest message that alone
                exceeds the budget is returned alone with ``over_budget``. Reads
                pages from the newest end: O(window). Not with ``last``,
                ``after`` or ``limit``; summary entries are never in the window.
            count_tokens: what counts tokens for ``max_tokens``: a callable on a
                list of messages, or a LangChain chat model; by default
                :func:`chatledger.approximate_tokens` (no download, approximate).
            with_summary: the latest summary entry as ``History.summary`` and
                only the messages after its ``through_seq``; costs the entries
                appended since that summary.

        Returns:
            The messages, each with its ``seq``, at one consistent version; a
            session that does not exist reads as version 0 with no messages.

        Raises:
            MemoryLostError: the store holds less than ``min_version``, or the
                session's ledger is not ``ledger``.
            CorruptEntryError: a stored entry in the window cannot be decoded.
            ValueError: ``last`` given with ``after`` or ``limit``, or a negative count.
            BackendUnavailable: the backend failed through every retry, within
                ``retry.deadline``.
        """
        floor = _core.check_min_version(min_version)
        _core.check_ledger_arg(ledger)
        if max_tokens is not None or with_summary:
            _core.check_fitting(last, after, limit, max_tokens)
            return self.store._call("read", self.id, _fitting(
                self, floor, ledger, count=count_with(count_tokens), budget=max_tokens,
                with_summary=with_summary))
        query = _core.make_query(last, after, limit)
        return self.store._call("read", self.id, _Read(self, query, floor, ledger))

    def summarize(self, summary: str, *, through_seq: int, expect_version: int | None,
                        ledger: str | None = None) -> Ack:
        """Store ``summary`` as the summary of every message up to seq ``through_seq``.

        The summary is an entry of the ledger (a ``system`` message marked in
        its metadata, see :func:`chatledger.summary_through`), appended only if
        the session is still at ``expect_version``, the version the summarizer
        read (None, said explicitly: after whatever is stored, retried on up
        to 10 conflicts). Messages stored after ``through_seq`` stay
        uncovered, whenever they arrived; raw messages stay stored (``trim``
        stays explicit). Its id is made from ``through_seq``: a second summary
        through the same seq stores nothing and gets the first one's Ack
        (``deduplicated=True``). Costs a ``with_summary`` read (the entries
        since the latest summary) and the append.

        Raises:
            ValueError: ``through_seq`` is below 1, not below the summary's own
                seq (past the version it is stored at), or not past the
                latest summary's cursor.
            ConflictError: the session is no longer at ``expect_version``.
            MemoryLostError: the session's ledger is not ``ledger``.
        """
        _core.check_count(through_seq, "through_seq")
        if through_seq < 1:
            raise ValueError(f"through_seq must be 1 or more, got {through_seq}")
        return write_summary(self, summary, through_seq, expect_version, ledger)

    def maybe_compact(self, summarize: Any, *, trigger_tokens: int, keep_tokens: int,
                            count_tokens: Any = None) -> Ack | None:
        """Summarize the oldest unsummarized messages once they count more than
        ``trigger_tokens``, keeping the newest ``keep_tokens`` out of the summary.

        Args:
            summarize: a LangChain chat model (asked with a default prompt), or
                a callable (async ones too, on an async store) that takes the
                messages to fold, the previous summary first if there is one,
                and returns the summary's text.
            trigger_tokens: do nothing while the messages after the latest
                summary count this many tokens or fewer.
            keep_tokens: the newest messages within this budget are left out
                of the summary (whole units, as ``read(max_tokens=...)``).
            count_tokens: as for :meth:`read`.

        Returns:
            The summary's Ack, or None when nothing was summarized (under the
            trigger, another summarizer stored a summary meanwhile, or the
            session stayed too busy for 10 attempts to store it).
            Messages appended while ``summarize`` ran are never covered: the
            summary is stored with ``expect_version`` at the version it was
            read at; after a conflict, after the newcomers, at the version
            checked, unless another summary landed meanwhile. So summaries
            are stored in the order of their cursors, each building on the
            one before it.
        """
        return compact(self, summarize, trigger_tokens=trigger_tokens,
                             keep_tokens=keep_tokens, count_tokens=count_tokens)

    def info(self) -> SessionInfo | None:
        """The session's version, size, times and ledger, or None if it does not exist."""
        def attempt() -> SessionInfo | None:
            raw = self._backend.info(self.id)
            self._seen(*((None, 0) if raw is None else (raw.ledger, raw.version)))
            return _core.to_info(raw)

        return self.store._call("info", self.id, attempt)

    def trim(self, *, keep_last: int) -> int:
        """Drop all but the last ``keep_last`` messages; return how many were dropped."""
        _core.check_count(keep_last, "keep_last")
        return self.store._call("trim", self.id,
                                      partial(self._backend.trim, self.id, keep_last))

    def trim_summarized(self) -> int:
        """Drop the messages the latest summary covers; return how many were dropped.

        Keeps the summary and everything after its cursor, whatever is appended
        meanwhile (the backend cuts at the cursor, never past it); a session
        without a summary is left alone. Costs a ``with_summary`` read and a trim.
        """
        history = self.read(with_summary=True)
        if history.summary is None:
            return 0
        return self._trim_through(summary_through(history.summary) or 0)

    def _trim_through(self, seq: int) -> int:
        """Drop the messages up to ``seq``; return how many were dropped.

        Bounded by ``seq`` in the backend: a trim counted from the newest end
        would drop as many later messages as were appended meanwhile.
        """
        return self.store._call("trim", self.id,
                                      partial(self._backend.trim, self.id, 0, seq))

    def delete(self) -> bool:
        """Delete the whole session; return whether it existed."""
        existed = self.store._call("delete", self.id, partial(self._backend.delete, self.id))
        self._seen(None, 0)
        return existed

    def __repr__(self) -> str:
        return f"<Session {self.id!r} of {self.store!r}>"


# The attempts of the hot calls are small objects, not closures or partials: a closure
# makes a cell per variable it shares with its function (and the function then makes
# them on every call, whichever branch runs), a partial three objects; each is held
# by the call while it waits for its reply, one more object for the collector to walk.


class _Read:
    """One ``read`` attempt: the window, decoded, after checking nothing was lost
    (in the attempt, so that listeners see a loss)."""

    __slots__ = ("floor", "ledger", "query", "session")

    def __init__(self, session: Session, query: ReadQuery, floor: int,
                 ledger: str | None) -> None:
        self.session, self.query, self.floor, self.ledger = session, query, floor, ledger

    def __call__(self) -> History:
        session = self.session
        raw = session._backend.read(session.id, self.query)
        session._seen(raw.ledger, raw.version)
        return _core.to_history(session.id, raw, self.floor, self.ledger, session.store.options,
                                query=self.query)


class _Append:
    """One ``append``'s attempts: the batch as built; after a failed attempt, pinned
    to the ledger the handle saw when the call began (``seen``), unless the caller
    named one, so that a retry never lands on a ledger made since. The pinned batch
    is built only when an attempt failed: most never do."""

    __slots__ = ("backend", "batch", "seen", "session_id", "tried")

    def __init__(self, backend: Backend, session_id: str, batch: Batch,
                 seen: str | None) -> None:
        self.backend, self.session_id, self.batch, self.seen = backend, session_id, batch, seen
        self.tried = False

    def __call__(self) -> Ack:
        batch = self.batch
        if self.tried and not batch.ledger:
            batch = self.batch = replace(batch, ledger=self.seen, strict=False)
        self.tried = True
        return self.backend.append(self.session_id, batch)


def _fitting(
    session: Session, floor: int, ledger: str | None, *, count: TokenCounter,
    budget: int | None, with_summary: bool,
) -> Callable[[], History]:
    """A ``read`` by token budget's attempt: a new walk each (a walk keeps what it took)."""
    return lambda: read_fitting(session, Walk(count, budget, with_summary), floor, ledger)
