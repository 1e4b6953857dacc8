"""``AsyncLedgerStore``: LangGraph's ``BaseStore`` (long-term memory) on an async
chatledger store.

The source of ``_sync/item_store.py`` (``LedgerStore``). How items map onto
the ledger:

- **One session per item.** Item ``key`` of namespace ``(l1, ..., ln)`` is the
  session ``lgs/<l1>/.../<ln>/=<key>`` (``_item_layout``: labels escaped and
  each ended by ``/``, so a namespace is a tuple, never joined text). Each put
  appends the item's new version as one entry (``_item_entries``): one atomic
  append, one round trip. ``get`` reads the newest entry (``read(last=1)``):
  one round trip. Every ``TRIM_EVERY``-th version also trims the older ones.
  ``delete`` deletes the session.
- **A value larger than one message may hold** (``max_message_bytes``, 1 MiB
  by default) is stored as the checkpointer stores one (``_parts``): the
  entry's data in parts, appended before the entry in the put's one append,
  so an item is stored whole or not at all. The newest entry is then always
  an item's entry, naming its parts: a read of it costs one more read of the
  session, for the parts.
- **Expiry is stamped in the entry** (``ttl`` minutes from the put, or from the
  last read with ``refresh_on_read``), and checked on every read against the
  store's clock: an expired item is never returned, whether or not a sweep ran.
  A refresh appends the same value with a later expiry, only if the item is
  still at the version read (``expect_version``): a refresh never undoes a
  put that landed meanwhile. ``sweep_ttl`` cuts an expired item's session
  through the expired entry's seq, never past it: a put that lands during the
  sweep is kept.
- **Search** reads the newest entry of every item under the prefix's id with
  the backend's ``heads`` (a page of 500 items in a round trip or a few:
  ``chatledger._async.heads``), never one read per item. Filters, ordering
  (newest ``updated_at`` first; by score for a semantic query) and
  ``offset``/``limit`` are applied here, after expiry: a limit never hides a
  live match behind an expired or filtered one.
- **list_namespaces** reads one item per namespace: the backend's
  ``group_heads`` seeks from the first item of a namespace (its ids share
  ``lgs/<labels>/=``) to the first of the next, so it costs what the
  namespaces cost, not the items (on DynamoDB a ``Query`` of its index a
  namespace; Redis, with no ordered index, scans every key and reads one
  head per namespace and page). A namespace whose first item
  expired is read on through its other items until one is live. It reads
  under the literal labels its prefix condition starts with (all items
  without one); conditions, ``max_depth`` and ``offset``/``limit`` are
  applied here.
- **Semantic search** (LangGraph's ``IndexConfig``, with PostgresStore's
  ``distance_type``: cosine, l2 or inner_product, scored as it scores them):
  the embeddings of a put's fields are stored in its entry as float32; a
  query scores every item under the prefix exactly (the best of its fields).
  On PostgreSQL with pgvector (``_item_vectors``), the backend also keeps them
  in a vector column, written in the put's transaction, and a query is one
  statement ordering the prefix's items by distance, the page in SQL. The
  items with no rows are read first, in one statement: those holding embeddings
  (imported, or stored before pgvector) are scored here, merged in, and given
  their rows; the others are the unscored ones, which end the page.
- **Batches** run their ops in order; each put or delete is atomic on its own,
  a batch as a whole is not (a failure raises after the ops before it applied).
  At most ``BATCHES_AT_ONCE`` batches of a store run at once (``_store_bridge``);
  the others wait their turn, their calls' deadlines not yet started, as
  LangGraph's batched stores queue their callers' ops: thousands of ops
  gathered at once run to the end instead of expiring in the pool's queue.
- **Retries**: each put's entry has its own id, so the store's retries of an
  unanswered append store it once, before the caller's next op starts.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import Any, Literal, NamedTuple

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)
from langgraph.store.base import validate_op_namespace as _validate_op_namespace

from ..._async.heads import first_entries, newest, newest_entries, opened
from ..._async.store import AsyncSession, AsyncStore, call_raw, open_async_store
from ..._async.vector_search import AsyncVectorSearching, vector_searching
from ..._backends.contract import Batch, Head
from ..._backends.vectors import VectorRows
from ..._codec import encode_system
from ..._errors import ConflictError, CorruptEntryError
from ..._ids import new_id
from ..._messages import Message
from ..._results import Ack, History
from .._bridge import AsyncOpening
from .._item_args import (
    check_embedded,
    check_index_config,
    check_op,
    check_put_namespace,
    check_ttl_config,
)
from .._item_entries import (
    StoredItem,
    entry_fields,
    entry_of,
    expired_entry,
    expires_at,
    item_of,
    parts_wanted,
    whole_entry,
)
from .._item_layout import (
    ITEM_PREFIX,
    checked_item_id,
    item_session_id,
    namespace_prefix_id,
    split_item_session_id,
)
from .._item_queries import (
    listed_namespaces,
    literal_prefix,
    matches_filter,
    similarity,
    to_float32,
)
from .._item_vectors import distance_of, pending, rows_of
from .._parts import split
from .._store_bridge import AsyncBridged
from .._terms import item_terms

__all__ = ["AsyncLedgerStore"]

TRIM_EVERY = 16
"""A put whose seqs reach a multiple of this also drops the item's older versions:
an item keeps at most this many, and a put costs one round trip 15 times in 16."""

_PART_READS = 3
"""Reads of an item's newest entry and its parts before giving up, when puts that
land in between keep trimming the parts read for."""

CONNECT_PROBE = ITEM_PREFIX + "="
"""The session whose info ``from_url`` reads to connect (no item is ever stored there)."""


class _Found(NamedTuple):
    """A live item read: where it is, what it holds, its version (a tuple: every get
    builds one, and a frozen dataclass's __init__ costs more)."""

    namespace: tuple[str, ...]
    key: str
    item: StoredItem
    version: int
    score: float | None = None


class AsyncLedgerStore(AsyncBridged, BaseStore):
    """LangGraph's long-term memory store on any chatledger store (the LangGraph
    page of the docs: "Long-term memory").

    Args:
        store: the chatledger store holding the items (its namespace, keyring,
            retries and timeouts apply).
        index: LangGraph's ``IndexConfig`` (``dims``, ``embed``, ``fields``)
            for semantic search; None: ``query`` is ignored, as LangGraph's
            stores without an index do.
        ttl: LangGraph's ``TTLConfig`` (``default_ttl`` and per-item ``ttl`` in
            minutes, ``refresh_on_read``, ``sweep_interval_minutes``).
        user_label: which label of a namespace names the user its items belong
            to (``1`` for ``("users", "<user id>", ...)``): a put tags the item
            with that user, so that ``store.forget_user(user)`` erases it with
            the user's sessions and threads. None: items are tagged with no user.
    """

    supports_ttl = True

    def __init__(self, store: AsyncStore, *, index: IndexConfig | None = None,
                 ttl: TTLConfig | None = None, owns_store: bool = False,
                 user_label: int | None = None) -> None:
        check_ttl_config(ttl)
        check_index_config(index)
        self.store = store
        self.user_label = user_label
        self.ttl_config = ttl
        self.index_config = index
        self.embeddings: Embeddings | None = None
        self._fields: list[tuple[str, str | list[str]]] = []
        self._distance = distance_of(index)
        # The backend's search by distance (pgvector), when it has one it may use.
        self._searching = vector_searching(store) if index is not None else None
        self._by_distance = self._searching is not None
        if index is not None:
            self.embeddings = ensure_embeddings(index.get("embed"))
            # text_fields: SqliteStore's name for fields, so its configs work here.
            fields: Any = index.get("fields") or dict(index).get("text_fields")
            self._fields = _tokenized(list(fields or ["$"]))
        self._owns_store = owns_store
        self.bind_loop()

    @classmethod
    def from_url(cls, url: str, *, index: IndexConfig | None = None,
                 ttl: TTLConfig | None = None, user_label: int | None = None,
                 **options: Any) -> AsyncOpening[AsyncLedgerStore]:
        """A store of items on its own chatledger store at ``url`` (``options`` as
        ``open_store``'s), closed by ``aclose()`` or on leaving
        ``async with AsyncLedgerStore.from_url(url) as store:``."""
        return AsyncOpening(cls._opened(url, index, ttl, user_label, options))

    @classmethod
    async def _opened(cls, url: str, index: IndexConfig | None, ttl: TTLConfig | None,
                      user_label: int | None, options: dict[str, Any]) -> AsyncLedgerStore:
        store = await open_async_store(url, **options)
        try:
            await store.session(CONNECT_PROBE).info()  # a server that is down fails here
        except BaseException:
            await store.close()
            raise
        return cls(store, index=index, ttl=ttl, owns_store=True, user_label=user_label)

    async def setup(self) -> None:
        """Nothing to set up (the chatledger store made its own tables); here for
        code written for LangGraph's stores, which call it."""

    async def aclose(self) -> None:
        await self.stop_ttl_sweeper()  # a sweep after the close would find the store closed
        if self._owns_store:
            await self.store.close()

    async def __aenter__(self) -> AsyncLedgerStore:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- the batch -------------------------------------------------------------

    _ops_alone = True
    """Whether ``aput`` and ``aget`` may skip ``abatch``: not where a subclass wraps
    ``abatch`` (to trace or meter every op), which must see them too, as BaseStore's do."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._ops_alone = cls.abatch is AsyncLedgerStore.abatch

    @item_terms
    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        for op in ops:  # every op checked before any runs
            _validate_op_namespace(op)
            check_op(op)
        async with self.turn():  # its calls' deadlines start once it runs, not while it waits
            return [await self._run(op) for op in ops]

    @item_terms
    async def aput(
        self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
        index: Literal[False] | list[str] | None = None, *,
        ttl: float | NotProvided | None = NOT_PROVIDED,
    ) -> None:
        """LangGraph's ``put``, with its checks and the batch's, run in a batch's turn
        without the batch (one op, every put: its list and dispatch cost)."""
        if not self._ops_alone:
            await super().aput(namespace, key, value, index, ttl=ttl)
            return
        if ttl is NOT_PROVIDED:
            ttl = self.ttl_config.get("default_ttl") if self.ttl_config else None
        op = PutOp(namespace, str(key), value, index=index, ttl=ttl)  # type: ignore[arg-type]
        check_put_namespace(op)  # BaseStore.put's own checks
        check_op(op)
        async with self.turn():
            await self._put(op)

    @item_terms
    async def aget(self, namespace: tuple[str, ...], key: str, *,
                   refresh_ttl: bool | None = None) -> Item | None:
        """LangGraph's ``get``, with the batch's checks, run in a batch's turn without
        the batch, as ``aput``."""
        if not self._ops_alone:
            return await super().aget(namespace, key, refresh_ttl=refresh_ttl)
        if refresh_ttl is None:  # as LangGraph's: the config's refresh_on_read, else True
            refresh_ttl = self.ttl_config.get("refresh_on_read", True) if self.ttl_config else True
        op = GetOp(namespace, str(key), refresh_ttl)
        _validate_op_namespace(op)
        check_op(op)
        async with self.turn():
            return await self._get(op)

    async def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return await self._get(op)
        if isinstance(op, PutOp):
            await self._put(op)
            return None
        if isinstance(op, SearchOp):
            return await self._search(op)
        if isinstance(op, ListNamespacesOp):
            return await self._list_namespaces(op)
        raise ValueError(f"unknown store operation: {type(op).__name__}")

    # -- one item --------------------------------------------------------------

    def _session(self, namespace: tuple[str, ...], key: str) -> AsyncSession:
        # item_session_id checks the id as store.session would (text, size, no NUL)
        return AsyncSession(self.store, item_session_id(tuple(namespace), key))

    async def _get(self, op: GetOp) -> Item | None:
        found = await self._read_item(op.namespace, op.key)
        if found is None:
            return None
        if op.refresh_ttl:
            found = await self._refreshed(found)
        return _item(found)

    async def _read_item(self, namespace: tuple[str, ...], key: str) -> _Found | None:
        """The item's newest version, or None when it does not exist or expired."""
        session_id = checked_item_id(tuple(namespace), key)
        history = await self._whole(session_id, await newest(self.store, session_id))
        return self._found(session_id, history, (namespace, key))

    async def _whole(self, session_id: str, history: History) -> History:
        """A read of the newest entry with the entry whole: an entry stored in parts
        costs one more read of its session, for them. When a put landed between the
        reads (and trimmed the parts), the newest entries are read again, in one read
        wide enough for the entry and its parts: one read is one version, which no
        put can trim in between."""
        read = history.version
        for _ in range(_PART_READS):
            entry = history.messages[-1] if history.messages else None
            wanted = None if entry is None else parts_wanted(entry, session_id)
            if entry is None or wanted is None:
                return history if entry is None else History(
                    [entry], history.version, history.first_seq, history.ledger)
            parts = History([m for m in history.messages
                             if wanted[0] < (m.seq or 0) < (entry.seq or 0)],
                            history.version, history.first_seq, history.ledger)
            if len(parts.messages) < wanted[1]:  # not in this read: read them
                parts = await self.store.session(session_id).read(after=wanted[0],
                                                                  limit=wanted[1])
            whole = whole_entry(parts.messages, entry, session_id)
            if whole is not None:
                return History([whole], history.version, history.first_seq, history.ledger)
            if parts.version == history.version:  # the same version lacks one: lost
                raise CorruptEntryError(session_id, entry.seq or 0,
                                        "a part of the item's value is missing")
            read, history = history.version, await self.store.session(session_id).read(
                last=2 * (wanted[1] + 1))  # a newer version of about the same size
        raise ConflictError(session_id, read, history.version)  # puts kept trimming its parts

    def _found(self, session_id: str, history: History,
               where: tuple[tuple[str, ...], str] | None = None) -> _Found | None:
        """The item a read of its newest entry found; None: absent or expired.
        ``where``: its (namespace, key), when the caller knows them."""
        if not history.messages:
            return None
        stored = item_of(history.messages[-1], session_id, self._dims())
        if stored.expired(self.store.options.clock()):
            return None
        namespace, key = where or split_item_session_id(session_id) or ((), "")
        return _Found(namespace, key, stored, history.version)

    async def _refreshed(self, found: _Found) -> _Found:
        """The item with its expiry pushed back, stored if nothing was put meanwhile."""
        if found.item.ttl is None:
            return found
        item = found.item.refreshed(self.store.options.clock())
        session = self._session(found.namespace, found.key)
        try:
            ack = await self._append_item(session, item, "value", found.version)
        except ConflictError:  # a put or another refresh landed: it set the expiry
            return found
        await self._trim_due(session.id, ack)  # a refresh is a whole copy too
        return _Found(found.namespace, found.key, item, ack.version, found.score)

    async def _put(self, op: PutOp) -> None:
        session = self._session(op.namespace, op.key)
        if self.user_label is not None and op.value is not None:
            session = self.store.session(session.id, user=_user_of(op.namespace,
                                                                   self.user_label))
        if op.value is None:
            await session.delete()
            return
        now = self.store.options.clock()
        value = dict(op.value)
        vectors = {} if self.embeddings is None or op.index is False else \
            await self._embedded(value, op.index)
        item = StoredItem(value, now, now, None if op.ttl is None else expires_at(op.ttl, now),
                          op.ttl, vectors)
        ack = await self._append_item(session, item, f"the value of item {op.key!r}")
        await self._trim_due(session.id, ack)

    async def _trim_due(self, session_id: str, ack: Ack) -> None:
        """Trim the versions before the one just stored, when it crossed a multiple of
        ``TRIM_EVERY``: an item keeps at most that many, whether puts or refreshes
        wrote them."""
        if ack.last_seq // TRIM_EVERY != (ack.first_seq - 1) // TRIM_EVERY \
                and not ack.deduplicated and ack.first_seq > 1:
            await self._cut(session_id, ack.first_seq - 1)  # never this version's parts

    async def _append_item(self, session: AsyncSession, item: StoredItem, what: str,
                           expect_version: int | None = None) -> Ack:
        """Append the entries storing ``item``, with its vector rows where the backend
        keeps them (:func:`pending`: only then, a context of its own).

        Built here from known types (``entry_fields`` checks what JSON could not
        keep), they are appended without the walk of every field, which cost a
        put more than the entry's encoding: an entry that fits in one message
        (nearly every one) as an encoded batch of its own, built without a
        Message (``encode_system``); a larger one in parts (``_parts``), and any
        entry of a store with a redact hook (which takes Messages), through
        ``_append_own``."""
        options = self.store.options
        metadata, data = entry_fields(item, what)
        message_id = new_id()
        blob = encode_system(message_id, metadata, data) if options.redact is None else None
        if blob is not None and len(blob) <= options.max_message_bytes:
            batch = Batch([message_id], [blob], expect_version, user=session.user)
            if not (self._by_distance and item.vectors):
                return await session._stored(batch)
            with pending(session.id, item, True):
                return await session._stored(batch)
        entries = split([Message(role="system", content="", id=message_id, metadata=metadata,
                                 data=data)], options.max_message_bytes)
        with pending(session.id, item, self._by_distance):
            return await session._append_own(entries, expect_version=expect_version)

    def _entries(self, item: StoredItem, what: str) -> list[Message]:
        """The messages storing ``item`` (``copy_items``): its entry, in parts when the
        value is larger than one message may hold."""
        return split([entry_of(item, what)], self.store.options.max_message_bytes)

    # -- many items ------------------------------------------------------------

    async def _live(self, prefix: tuple[str, ...]) -> list[_Found]:
        """Every live item under the namespace prefix: their newest entries, a page
        of items a call."""
        return await self._live_under(namespace_prefix_id(prefix))

    async def _live_under(self, prefix_id: str) -> list[_Found]:
        found: list[_Found] = []
        async for head in newest_entries(self.store, prefix_id):
            item = self._found(head[0], await self._whole(head[0], opened(self.store, head)))
            if item is not None:
                found.append(item)
        return found

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        query = None
        if op.query and self.embeddings is not None:
            query = await self.embeddings.aembed_query(op.query)
        if query is not None and self._searching is not None:
            page = await self._by_vectors(op, query)
        else:
            matches = [f for f in await self._live(tuple(op.namespace_prefix))
                       if matches_filter(f.item.value, op.filter)]
            if query is not None:
                matches = _ranked(matches, query, self._distance)
            else:
                matches.sort(key=lambda f: (-f.item.updated, f.namespace, f.key))
            page = matches[op.offset:op.offset + op.limit]
        if op.refresh_ttl:
            page = [await self._refreshed(found) for found in page]
        return [_search_item(found) for found in page]

    def _searcher(self) -> AsyncVectorSearching:
        """The backend's search by distance (searches take this path only with one)."""
        assert self._searching is not None
        return self._searching

    async def _by_vectors(self, op: SearchOp, query: list[float]) -> list[_Found]:
        """The page of a semantic search the backend orders by distance: scored
        items first (offset and limit in SQL; with a filter, pages of candidates
        filtered here), then, if the page runs past them, the unscored ones.

        The items without rows (:meth:`_unrowed`) are read first: those holding
        embeddings anyway (imported, or stored before pgvector) are scored here
        and merged in, never missed."""
        prefix = namespace_prefix_id(tuple(op.namespace_prefix))
        late, unscored, rows = await self._unrowed(prefix, query, op)
        try:
            return await self._merged(prefix, query, op, late, unscored)
        finally:
            if rows:  # after the SQL read: kept before, they would be scored twice
                await call_raw(self.store, "vector_search", prefix,
                               lambda _: self._searcher().vector_backfill(rows))

    async def _merged(self, prefix: str, query: list[float], op: SearchOp,
                      late: list[_Found], unscored: list[_Found]) -> list[_Found]:
        """The page: the items the SQL scores merged with ``late`` (scored here),
        then ``unscored``."""
        wanted = op.offset + op.limit
        if op.filter:
            scored = await self._scored_matching(prefix, query, op)
        elif late:  # merged with the best the SQL scored: the page from the start
            scored = await self._scored(prefix, query, wanted, 0)
        else:
            scored = await self._scored(prefix, query, op.limit, op.offset)
            if len(scored) == op.limit:
                return scored
            count = op.offset + len(scored) if scored or not op.offset else \
                await call_raw(self.store, "vector_search", prefix,
                               lambda _: self._searcher().vector_count(prefix))
            return (scored + unscored[max(0, op.offset - count):])[:op.limit]
        # Short of ``wanted``, ``scored`` holds every scored item: the unscored follow.
        # A put landing since the items without rows were read gave one rows: once.
        rowed = {(f.namespace, f.key) for f in scored}
        late = [f for f in late if (f.namespace, f.key) not in rowed]
        merged = sorted(scored + late, key=lambda f: (-(f.score or 0.0), f.namespace, f.key))
        return (merged + unscored)[op.offset:wanted]

    async def _unrowed(self, prefix: str, query: list[float], op: SearchOp
                       ) -> tuple[list[_Found], list[_Found], list[tuple[int, VectorRows]]]:
        """The live items under ``prefix`` matching the filter that have no rows:
        those with embeddings, scored here, and those without, newest first; and the
        rows to keep for the former, so that the next search scores them in SQL."""
        heads = await call_raw(self.store, "vector_search", prefix,
                               lambda _: self._searcher().vector_unrowed(prefix))
        found: list[_Found] = []
        rows: list[tuple[int, VectorRows]] = []
        for head in heads:
            item = self._found(head[0], await self._whole(head[0], opened(self.store, head)))
            if item is not None and item.item.vectors:
                rows.append((item.version, rows_of(head[0], item.item)))
            if item is not None and matches_filter(item.item.value, op.filter):
                found.append(item)
        ranked = _ranked(found, query, self._distance)
        return ([f for f in ranked if f.item.vectors], [f for f in ranked if not f.item.vectors],
                rows)

    async def _scored_matching(self, prefix: str, query: list[float],
                               op: SearchOp) -> list[_Found]:
        """The scored items passing the filter, from the best, until the page is
        full (or all of them)."""
        wanted, chunk = op.offset + op.limit, max(2 * (op.offset + op.limit), 100)
        matches: list[_Found] = []
        at = 0
        while len(matches) < wanted:
            found = await self._scored(prefix, query, chunk, at)
            matches += [f for f in found if matches_filter(f.item.value, op.filter)]
            at += chunk
            if len(found) < chunk:
                break
        return matches

    async def _scored(self, prefix: str, query: list[float], limit: int,
                      offset: int) -> list[_Found]:
        searcher = self._searcher()
        rows = await call_raw(self.store, "vector_search", prefix, lambda _: searcher.vector_search(
            prefix, query, self._distance, limit=limit, offset=offset))
        found = []
        for session_id, score, raw in rows:
            item = self._found(session_id, await self._whole(
                session_id, opened(self.store, (session_id, raw))))
            if item is not None:
                found.append(_Found(item.namespace, item.key, item.item, item.version, score))
        return found

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        listed = literal_prefix(op.match_conditions)  # read only what a prefix can match
        live: dict[str, tuple[str, ...]] = {}  # a namespace's id prefix -> the namespace
        dead: set[str] = set()  # namespaces whose every item expired
        async for head in first_entries(self.store, namespace_prefix_id(listed), "="):
            labels = head[0].partition("=")[0]
            if labels in live or labels in dead:  # a group listed again (Redis: per page)
                continue
            # its first item expired: read on through its others
            if self._live_head(head) or await self._any_live(labels + "="):
                live[labels] = (split_item_session_id(head[0]) or ((), ""))[0]
            else:
                dead.add(labels)
        kept = listed_namespaces(live.values(), op.match_conditions, op.max_depth)
        return kept[op.offset:op.offset + op.limit]

    def _live_head(self, head: Head) -> bool:
        """Whether a head is a live item, from its entry's metadata: no value decoded,
        no parts read (an item's expiry is in the entry naming its parts)."""
        history = opened(self.store, head)
        return bool(history.messages) and not expired_entry(
            history.messages[-1], head[0], self.store.options.clock())

    async def _any_live(self, prefix_id: str) -> bool:
        """Whether a session under ``prefix_id`` (one namespace's) is a live item."""
        async for head in newest_entries(self.store, prefix_id):
            if self._live_head(head):
                break
        else:
            return False
        return True

    @item_terms
    async def sweep_ttl(self) -> int:
        """Drop every expired item's versions; return how many items were swept.

        Each is cut through the expired entry's seq and never past it, so a put
        that lands meanwhile stays. Reads never return an expired item, swept
        or not: the sweep only frees the space. Costs a read of every item's
        newest entry (a page of items a call) and a trim of each expired one.
        """
        swept = 0
        async for head in newest_entries(self.store, ITEM_PREFIX):
            session_id = head[0]
            history = await self._whole(session_id, opened(self.store, head))
            if not history.messages:
                continue
            entry = history.messages[-1]
            if item_of(entry, session_id, self._dims()).expired(self.store.options.clock()):
                await self._cut(session_id, entry.seq or 0)
                swept += 1
        return swept

    async def _cut(self, session_id: str, through_seq: int) -> None:
        await call_raw(self.store, "trim", session_id,  # trim_summarized's bounded trim
                       lambda backend: backend.trim(session_id, 0, through_seq))

    # -- embeddings ------------------------------------------------------------

    def _dims(self) -> int | None:
        return None if self.index_config is None else int(self.index_config["dims"])

    async def _embedded(self, value: dict[str, Any],
                        index: Any) -> dict[str, bytes]:
        """The float32 embeddings of the value's indexed fields, by path."""
        if self.embeddings is None or index is False:
            return {}
        fields = self._fields if index is None else _tokenized(index)
        texts: dict[str, str] = {}
        for path, tokens in fields:
            found = get_text_at_path(value, tokens)
            if len(found) == 1:
                texts[path] = found[0]
            else:
                texts.update((f"{path}.{i}", text) for i, text in enumerate(found))
        if not texts:
            return {}
        vectors = await self.embeddings.aembed_documents(list(texts.values()))
        check_embedded(vectors, len(texts))
        dims = int(self.index_config["dims"])  # type: ignore[index]
        return {path: to_float32(vector, dims)
                for path, vector in zip(texts, vectors, strict=True)}


def _user_of(namespace: tuple[str, ...], label: int) -> str | None:
    """The user a namespace names at ``label`` (None: too short to name one)."""
    return namespace[label] if -len(namespace) <= label < len(namespace) else None


def _tokenized(fields: list[str]) -> list[tuple[str, str | list[str]]]:
    return [(path, path if path == "$" else tokenize_path(path)) for path in fields]


def _ranked(matches: list[_Found], query: list[float], distance: str) -> list[_Found]:
    """Scored items first, best first (an item scores its best field); then the
    items with no embedding, newest first, as LangGraph's stores rank them."""
    norm = math.hypot(*query)
    scored = [_Found(f.namespace, f.key, f.item, f.version,
                     max(similarity(distance, query, vector, norm)
                         for vector in f.item.vectors.values()))
              for f in matches if f.item.vectors]
    scored.sort(key=lambda f: (-(f.score or 0.0), f.namespace, f.key))
    rest = sorted((f for f in matches if not f.item.vectors),
                  key=lambda f: (-f.item.updated, f.namespace, f.key))
    return scored + rest


def _item(found: _Found) -> Item:
    created, updated = found.item.times()
    return Item(value=found.item.value, key=found.key, namespace=found.namespace,
                created_at=created, updated_at=updated)


def _search_item(found: _Found) -> SearchItem:
    created, updated = found.item.times()
    return SearchItem(namespace=found.namespace, key=found.key, value=found.item.value,
                      created_at=created, updated_at=updated, score=found.score)
