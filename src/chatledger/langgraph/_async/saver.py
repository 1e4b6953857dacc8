"""``AsyncLedgerSaver``: LangGraph's checkpointer interface on an async chatledger store.

The source of ``_sync/saver.py`` (``LedgerSaver``). Per step LangGraph calls
``put`` (one atomic append with ``expect_version``, after a read only when it
does not continue the head this saver knows, ``heads.py``) and ``put_writes``
(one append), and reads the latest checkpoint with ``get_tuple`` (one read,
plus one per stretch of the ledger holding a value that did not change since,
or a list's snapshot and deltas).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, NamedTuple

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
    PendingWrite,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from ..._async.store import AsyncStore, open_async_store
from ..._errors import ChatLedgerError, ConflictError, CorruptEntryError, MemoryLostError
from .._bridge import AsyncOpening, LoopBridge
from .._cache import ValueCache
from .._chain import (
    CheckpointConflict,
    Found,
    Walk,
    check_parent,
    checkpoint_put,
    continues_run,
    pending_writes,
)
from .._decoded import DecodedItems
from .._early import EarlyWrites
from .._entries import CheckpointEntry, Tombstone, Typed, Write, WritesEntry, encode
from .._exact import ExactValues
from .._expiry import sweep_due
from .._heads import Head, Heads
from .._inflight import InFlight
from .._layout import (
    ROOT_PREFIX,
    check_address,
    check_checkpoint,
    check_names,
    digest,
    index_session_id,
    session_id,
    split_session_id,
    thread_prefix,
    thread_text,
    writes_message_id,
)
from .._lists import ItemList, Items, msgpack_array
from .._loss import known_checkpoint, rolled_back
from .._parts import split
from .._runs import RunToken, check_fence, head_key, run_token
from .._terms import thread_terms
from .._unchanged import UnchangedItems
from .ledger import AsyncCheckpointLedger
from .loss import find_known, input_kept, rolled_back_error
from .maintenance import copy_session, restate_latest
from .threads import AsyncThreadIndex

__all__ = ["AsyncLedgerSaver"]

CONNECT_PROBE = "chatledger:connect"
"""The thread whose index ``from_url`` reads to connect (it reads, never writes)."""

_OWN_WRITES_REREADS = 3  # then append at the version read: a failed append reads again
PUT_ATTEMPTS = 64
"""Appends a put tries when only writes (no checkpoint) got in before it.

Each failed attempt means another task's writes were stored, so the thread
moved on; a step of many parallel tasks stores as many writes while one put
reads and appends (LangGraph's test_store_injected runs 51; on PostgreSQL,
where an append is several statements, 8 attempts were not always enough).
"""


class AsyncLedgerSaver(LoopBridge, BaseCheckpointSaver[str]):
    """A LangGraph checkpointer on any chatledger store (the LangGraph page of the docs).

    ``allow_forks=True`` accepts a put whatever its parent (LangGraph's usual
    behaviour); by default a put whose parent is not the latest checkpoint of
    its namespace raises CheckpointConflict (a ConflictError), unless the run
    addressed that parent itself (replay, ``update_state`` on an old checkpoint).

    ``user_key``: the key of ``config["configurable"]`` that names the user a
    thread belongs to (``"user_id"``; None: threads are never tagged). A put
    with one tags the thread's sessions at their first write, so that
    ``store.forget_user(user)`` erases the thread; a thread written first
    without a user, or with another, then raises SessionUserError.
    """

    def __init__(self, store: AsyncStore, *, allow_forks: bool = False,
                 serde: SerializerProtocol | None = None, owns_store: bool = False,
                 user_key: str | None = "user_id") -> None:
        super().__init__(serde=serde)
        self.store = store
        self.allow_forks = allow_forks
        self.user_key = user_key
        self._owns_store = owns_store
        self._early = EarlyWrites()
        self._heads = Heads()
        self._in_flight = InFlight()
        self._values = ValueCache()
        self._exact = ExactValues()
        self._unchanged = UnchangedItems()
        self._decoded = DecodedItems()
        self.bind_loop()

    @classmethod
    def from_url(cls, url: str, *, allow_forks: bool = False,
                 serde: SerializerProtocol | None = None, user_key: str | None = "user_id",
                 **options: Any) -> AsyncOpening[AsyncLedgerSaver]:
        """A saver on its own store at ``url``, closed by ``aclose()`` or on
        leaving ``async with AsyncLedgerSaver.from_url(url) as saver:``."""
        return AsyncOpening(cls._opened(url, allow_forks, serde, user_key, options))

    @classmethod
    async def _opened(cls, url: str, allow_forks: bool, serde: SerializerProtocol | None,
                      user_key: str | None, options: dict[str, Any]) -> AsyncLedgerSaver:
        store = await open_async_store(url, **options)
        try:
            # Connect now, as LangGraph's own savers do in from_conn_string: a
            # server that is down fails here, and a run's first step (which
            # LangGraph times for its streaming) does not wait for a connection.
            await store.session(index_session_id(CONNECT_PROBE)).info()
        except BaseException:
            await store.close()
            raise
        return cls(store, allow_forks=allow_forks, serde=serde, owns_store=True,
                   user_key=user_key)

    async def aclose(self) -> None:
        if self._owns_store:
            await self.store.close()

    async def __aenter__(self) -> AsyncLedgerSaver:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- reads ---------------------------------------------------------------

    @thread_terms
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id, ns, checkpoint_id = _address(config)
        ledger = self._ledger(thread_id, ns)
        seen = self._heads.get(ledger.session.id)  # before the read: acknowledged, or read
        walk = ledger.walk()
        token = run_token(config, ns)
        found = await find_known(ledger, lambda f: checkpoint_id in (None, f.entry.checkpoint_id),
                                 walk, known_checkpoint(config, ns),
                                 _since(seen) if token is None and checkpoint_id is None else None)
        if seen is not None and rolled_back(seen, ledger.version, ledger.ledger):
            raise await rolled_back_error(ledger, seen, found if checkpoint_id is None else None)
        if token is not None and checkpoint_id is None:  # stop a superseded run early
            check_fence(token, thread_id=thread_id, ledger=ledger.ledger, leases=walk.leases,
                        latest_run=found.entry.run if found else None)
        if found is None:
            return None
        if checkpoint_id is None:  # the head: what the next put continues
            self._remember(ledger.session.id, token,
                           Head(found.entry, ledger.version, ledger.ledger, walk.swept))
        return await self._tuple(ledger, thread_id, ns, found, walk, read_for_put=_in_run(config))

    @thread_terms
    async def alist(
        self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None, limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        remaining = limit
        wanted = _address(config)[2] if config else None
        # LangGraph passes a bare {"configurable": {"checkpoint_id": ...}} here.
        before_id = get_checkpoint_id(before) if before else None
        async for thread_id, ns in self._namespaces(config):
            ledger = self._ledger(thread_id, ns)
            walk = ledger.walk()
            async for page in ledger.pages():
                for found in walk.feed(page):
                    if remaining is not None and remaining <= 0:
                        return
                    if self._listed(found, wanted, before_id, filter):
                        yield await self._tuple(ledger, thread_id, ns, found, walk)
                        remaining = None if remaining is None else remaining - 1
                    walk.forget_from(found.entry.seq)
                if remaining is not None and remaining <= 0:
                    return
                if walk.ended:
                    break

    async def _list_each(self, thread_id: str, ns: str, limit: int
                         ) -> AsyncIterator[CheckpointTuple | CorruptEntryError]:
        """One namespace's checkpoints as ``alist`` lists them (the first ``limit``,
        newest first), for a tool that shows a damaged thread: a stored entry that does
        not decode, or a checkpoint that does not load, is its error in its place (by
        seq), where ``alist`` raises at the first and shows nothing past it."""
        damaged: dict[int, CorruptEntryError] = {}
        ledger = AsyncCheckpointLedger(self.store.session(session_id(thread_id, ns)),
                                       damaged=damaged)
        told: set[int] = set()  # a later read may meet a damaged entry again

        def newer_damage(seq: int) -> list[CorruptEntryError]:
            newer = sorted((s for s in damaged if s > seq and s not in told), reverse=True)
            told.update(newer)
            return [damaged[s] for s in newer]

        walk = ledger.walk()
        async for page in ledger.pages():
            for found in walk.feed(page):
                for exc in newer_damage(found.entry.seq):
                    yield exc
                if limit <= 0:
                    return
                yield await self._loaded(ledger, thread_id, ns, found, walk)
                limit -= 1
                walk.forget_from(found.entry.seq)
            if walk.ended:
                break
        for exc in newer_damage(0):
            yield exc

    async def _loaded(self, ledger: AsyncCheckpointLedger, thread_id: str, ns: str,
                      found: Found, walk: Walk) -> CheckpointTuple | CorruptEntryError:
        """The checkpoint ``found`` as ``alist`` gives it, or why it cannot be given."""
        try:
            loaded = await self._tuple(ledger, thread_id, ns, found, walk)
            if isinstance(loaded.metadata, dict):
                return loaded
        except CorruptEntryError as exc:
            return exc
        except ChatLedgerError:  # the store's (unavailable, lost): no word on the checkpoint
            raise
        except Exception:  # the serializer's, whatever it raises on bytes it cannot read
            pass
        reason = await self._unloadable(ledger, found.entry, walk)
        # Said with the serializer: a thread written with another (an encrypting one,
        # say) does not load with this saver's, and is not damaged for that.
        return CorruptEntryError(ledger.session.id, found.entry.seq,
                                 f"checkpoint {found.entry.checkpoint_id!r}: {reason} with "
                                 f"the serializer {type(self.serde).__name__}")

    async def _unloadable(self, ledger: AsyncCheckpointLedger, entry: CheckpointEntry,
                          walk: Walk) -> str:
        """Which stored part of a checkpoint the serializer does not load, in a user's
        words (the serializer's own error names its internals)."""
        values = await ledger.values(entry, walk)  # read already: the walk holds them
        parts = [("its checkpoint", entry.checkpoint, dict),
                 ("its metadata", entry.metadata, dict),
                 *((f"the value of channel {ch!r}", value, object)
                   for ch, value in values.items())]
        for what, stored, kind in parts:
            try:
                loaded = self._loads(stored)
            except Exception:  # as above: its words name the serializer's internals
                return f"{what} does not load"
            if not isinstance(loaded, kind):
                return f"{what} does not load"
        return "a pending write on it does not load"

    @thread_terms
    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str],
    ) -> Mapping[str, DeltaChannelHistory]:
        """Per channel, the writes on the ancestors of a checkpoint back to the
        nearest one holding a value (its ``seed``), oldest first.

        One walk back along the parent chain: each ancestor's writes are the
        ones the walk meets (and its early ones), and only the wanted channels'
        values are read, not the rest of each checkpoint.
        """
        if not channels:
            return {}
        thread_id, ns, checkpoint_id = _address(config)
        ledger = self._ledger(thread_id, ns)
        collected: dict[str, list[PendingWrite]] = {ch: [] for ch in channels}
        seeds: dict[str, Any] = {}
        remaining = set(channels)
        walk = ledger.walk()
        target_seen = False
        async for found in ledger.chain(checkpoint_id, walk):
            if not target_seen:  # its own writes are pending, not history
                target_seen = True
                continue
            writes = pending_writes(await ledger.writes(found))
            for task, ch, value, _, _ in reversed(writes):
                if ch in remaining:
                    collected[ch].append((task, ch, self.serde.loads_typed(value)))
            for ch, stored in (await ledger.values(found.entry, walk, remaining)).items():
                seeds[ch] = self._loads(stored)
                remaining.discard(ch)
            if not remaining:
                break
        history: dict[str, DeltaChannelHistory] = {}
        for ch in channels:
            history[ch] = {"writes": collected[ch][::-1]}
            if ch in seeds:
                history[ch]["seed"] = seeds[ch]
        return history

    # -- writes --------------------------------------------------------------

    @thread_terms
    async def aput(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        thread_id, ns, parent_id = _address(config)
        check_checkpoint(checkpoint)
        ledger = self._ledger(thread_id, ns, self._user(config))
        stored_metadata = get_checkpoint_metadata(config, metadata)
        typed_values = self._new_values(ledger.session.id, checkpoint, stored_metadata,
                                        new_versions)
        body = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        typed_body = self.serde.dumps_typed(body)
        typed_metadata = self._exact.dumps(self.serde, "", stored_metadata)
        conflict: ConflictError | None = None
        put = _Put(checkpoint["id"], parent_id, typed_body, typed_metadata,
                   checkpoint["channel_versions"], typed_values)
        session = ledger.session.id
        token = run_token(config, ns)
        timeout = self.store.options.timeout
        await self._in_flight.asettled(session, timeout)  # appends once after them
        for attempt in range(PUT_ATTEMPTS):
            await self._early.asettled(session, put.checkpoint_id, timeout)
            put.early = self._early.seqs(session, put.checkpoint_id)
            # First with the head this saver knows (no read); after a failed
            # append, with what the ledger says.
            known = self._known_head(head_key(session, token), parent_id) if attempt == 0 else None
            plan = known or await self._read_planned(ledger, put, config, stored_metadata, token)
            if plan is None:  # stored already: a retried put
                break
            batch = checkpoint_put(
                put.checkpoint_id, plan.entry, parent_id=parent_id, checkpoint=typed_body,
                metadata=typed_metadata, channels=put.channels, new_values=typed_values,
                swept=plan.swept, first=plan.first, early=sorted(set(put.early)),
                max_bytes=self.store.options.max_message_bytes,
                known=self._values.get(session, plan.ledger),
                run=None if token is None else token.seq)
            try:
                ack = await ledger.append(batch.messages, expect_version=plan.version,
                                          ledger=plan.ledger)
            except (ConflictError, MemoryLostError) as exc:
                # Something was stored (or the thread deleted) since the
                # read: look again; only a new checkpoint is a conflict.
                conflict = exc if isinstance(exc, ConflictError) else conflict
                continue
            entry, values = batch.stored(ack.last_seq)
            self._remember(session, token, Head(entry, ack.version, ack.ledger, plan.swept))
            if not ack.deduplicated:  # the next get_tuple decodes none of it again
                self._values.hold(session, ack.ledger, entry, values)
            break
        else:
            assert conflict is not None
            raise conflict
        self._early.put(session, put.checkpoint_id)
        return _config(thread_id, ns, put.checkpoint_id)

    def _remember(self, session: str, token: RunToken | None, head: Head) -> None:
        """Remember ``head`` for the session and, under a lease, for the run: a
        run's put appends without reading only at a version that run saw (``runs.py``)."""
        self._heads.remember(session, head)
        if token is not None:
            self._heads.remember(head_key(session, token), head)

    def _known_head(self, session: str, parent_id: str | None) -> _Plan | None:
        """The head this saver knows, if the put continues it and no sweep is due."""
        head = self._heads.get(session)
        if head is None or parent_id is None or head.entry.checkpoint_id != parent_id:
            return None
        options = self.store.options
        if sweep_due(head.swept, options.clock(), options.ttl):
            return None
        return _Plan(head.entry, head.version, head.ledger, head.swept, first=False)

    async def _read_planned(self, ledger: AsyncCheckpointLedger, put: _Put,
                            config: RunnableConfig, metadata: CheckpointMetadata,
                            token: RunToken | None) -> _Plan | None:
        """``_read_head``, read again while this saver's own writes end during the read
        (``inflight.py``): appending at the version read would fail, as a conflict."""
        session, timeout = ledger.session.id, self.store.options.timeout
        for _ in range(_OWN_WRITES_REREADS):
            with self._in_flight.watching(session) as watch:
                plan = await self._read_head(ledger, put, config, metadata, token)
                await self._in_flight.asettled(session, timeout)
            if plan is None or not watch.ended:
                return plan
        return plan

    async def _read_head(self, ledger: AsyncCheckpointLedger, put: _Put,
                         config: RunnableConfig, metadata: CheckpointMetadata,
                         token: RunToken | None) -> _Plan | None:
        """What the ledger says the put continues; None when it is stored already.
        Under a lease, LeaseLost if another run took the thread (``runs.py``)."""
        walk = ledger.walk()
        latest = await ledger.find(lambda f: True, walk)
        # What this attempt saw: reading the parent (a fork) reads the ledger
        # again, and a write stored since must fail the append.
        seen_version, seen_ledger = ledger.version, ledger.ledger
        latest_id = latest.entry.checkpoint_id if latest else None
        if latest_id == put.checkpoint_id:
            return None
        thread_id, ns = _split(ledger.session.id)
        if token is not None:
            check_fence(token, thread_id=thread_id, ledger=seen_ledger, leases=walk.leases,
                        latest_run=latest.entry.run if latest else None)
        try:
            check_parent(
                session=ledger.session.id, version=seen_version, thread_id=thread_id,
                checkpoint_ns=ns, parent=put.parent_id, latest=latest_id,
                metadata=metadata, config=config, allow_forks=self.allow_forks,
            )
        except CheckpointConflict as refused:
            if continues_run(metadata, config):  # its input stored before: still there?
                raise refused.kept(await input_kept(ledger, put.parent_id, self._source)) from None
            raise
        base = latest.entry if latest and latest_id == put.parent_id else (
            await self._checkpoint(ledger, put.parent_id))
        if put.swept is None:
            put.swept = [await self._swept(thread_id, ns, ledger, walk)]
        put.early += [w.seq for w in walk.writes.get(put.checkpoint_id, ())]
        return _Plan(base, seen_version, seen_ledger, put.swept[0], first=walk.expired)

    @thread_terms
    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
        task_path: str = "",
    ) -> None:
        if not writes:
            return
        thread_id, ns, checkpoint_id = _address(config)
        if checkpoint_id is None:
            raise ValueError("put_writes needs a checkpoint_id in config['configurable']")
        check_names(task_id, task_path, [channel for channel, _ in writes])
        stored: list[Write] = []
        content: list[str | bytes] = [task_id, task_path]  # what the entry's id digests
        for i, (channel, value) in enumerate(writes):  # one pass: each value dumped once
            idx = WRITES_IDX_MAP.get(channel, i)
            typed = self._exact.dumps(self.serde, channel, value)
            stored.append(Write(idx, channel, typed))
            content += (str(idx), channel, *typed)
        run = run_token(config, ns)
        entry = WritesEntry(checkpoint_id, task_id, task_path, stored,
                            run=None if run is None else run.seq)
        messages = split([encode(entry, writes_message_id(checkpoint_id, digest(*content)))],
                         self.store.options.max_message_bytes)
        ledger = self._ledger(thread_id, ns, self._user(config))
        session = ledger.session.id
        # The checkpoint may not be stored yet: its put will name this write.
        token = self._early.begin(session, checkpoint_id)
        in_flight = self._in_flight.begin(session)
        seq = None
        try:
            ack = await ledger.append(messages)
            seq = ack.last_seq  # the entry, after its parts
            self._heads.appended(session, ack, len(messages))
            if run is not None:  # and the head the run knows
                self._heads.appended(head_key(session, run), ack, len(messages))
        finally:
            self._in_flight.end(session, in_flight)
            if token is not None:
                self._early.end(session, checkpoint_id, token, seq)

    # -- threads -------------------------------------------------------------

    async def adelete_thread(self, thread_id: str) -> None:
        thread = thread_text(thread_id)
        self._forget(thread_prefix(thread))
        await self.store.purge(prefix=index_session_id(thread))

    @thread_terms
    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Hide every checkpoint of these runs behind a tombstone (one append per namespace).

        Scans every thread: the store keeps no index by run.
        """
        wanted = set(run_ids)
        if not wanted:
            return
        self._forget(ROOT_PREFIX)
        async for session in self.store.sessions(prefix=ROOT_PREFIX):
            ledger = AsyncCheckpointLedger(self.store.session(session))
            walk = ledger.walk()
            doomed = []
            async for page in ledger.pages():
                doomed += [f.entry.checkpoint_id for f in walk.feed(page)
                           if self.serde.loads_typed(f.entry.metadata).get("run_id") in wanted]
            if doomed:
                await ledger.append([encode(Tombstone(doomed), f"x/{digest(*doomed)}")])

    @thread_terms
    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy every namespace of a thread, whole, to a thread that has none of them,
        tagged with the source thread's user.

        The copies keep the source's expiry: they expire when it would have
        without further puts, unless a put on the new thread sweeps it first.
        """
        # The copy belongs to the source's user: forget_user erases it too.
        source_thread = thread_text(source_thread_id)
        source = await self.store.session(index_session_id(source_thread)).info()
        user = None if source is None else source.user
        target = AsyncThreadIndex(self.store, thread_text(target_thread_id), user)
        self._forget(thread_prefix(target.thread_id))
        async for session in self.store.sessions(prefix=thread_prefix(source_thread)):
            _, ns = _split(session)
            await copy_session(self.store.session(session),
                               self.store.session(session_id(target.thread_id, ns), user=user))
            await target.register(ns, None)

    @thread_terms
    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``"delete"``: delete the threads. ``"keep_latest"``: keep only each
        namespace's latest checkpoint (restated whole, then what came before it
        trimmed). A run may write meanwhile: a write before the restatement makes
        it read again, one after it is kept whole; the lease a run holds is
        restated with the checkpoint.
        """
        if strategy not in ("keep_latest", "delete"):
            raise ValueError(f"strategy must be 'keep_latest' or 'delete', not {strategy!r}")
        for thread in [thread_text(thread_id) for thread_id in thread_ids]:  # all checked
            self._forget(thread_prefix(thread))
            if strategy == "delete":
                await self.adelete_thread(thread)
                continue
            async for session in self.store.sessions(prefix=thread_prefix(thread)):
                await restate_latest(self._ledger(*_split(session)))

    def get_next_version(self, current: str | None, channel: None) -> str:
        """Zero-padded counter plus a random fraction: sortable, distinct across forks.

        A thread copied from a saver that counts in plain integers
        (DynamoDBSaver, LangGraph's base saver) goes on counting so: LangGraph
        compares a thread's versions with each other, never a str with an int.
        """
        if isinstance(current, int):
            return current + 1  # the thread's own kind
        number = 0 if current is None else int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"

    # -- helpers -------------------------------------------------------------

    def _ledger(self, thread_id: str, ns: str, user: str | None = None) -> AsyncCheckpointLedger:
        session = self.store.session(session_id(thread_id, ns), user=user)
        return AsyncCheckpointLedger(session, self._values)

    def _user(self, config: RunnableConfig) -> str | None:
        """The user the config names (``user_key``), whose thread this is."""
        if self.user_key is None:
            return None
        user = config["configurable"].get(self.user_key)
        return None if user is None else str(user)

    def _forget(self, prefix: str) -> None:
        """Forget what this saver knows of sessions whose ids start with ``prefix``."""
        self._heads.forget(prefix)
        self._values.forget(prefix)
        self._unchanged.forget(prefix)
        self._decoded.forget(prefix)

    async def _namespaces(self, config: RunnableConfig | None) -> AsyncIterator[tuple[str, str]]:
        if config is not None and config["configurable"].get("checkpoint_ns") is not None:
            thread_id, ns, _ = _address(config)
            yield thread_id, ns
            return
        prefix = ROOT_PREFIX if config is None else thread_prefix(_address(config)[0])
        async for session in self.store.sessions(prefix=prefix):
            if split_session_id(session) is not None:
                yield _split(session)

    async def _checkpoint(self, ledger: AsyncCheckpointLedger,
                          checkpoint_id: str | None) -> CheckpointEntry | None:
        if checkpoint_id is None:
            return None
        found = await ledger.find(lambda f: f.entry.checkpoint_id == checkpoint_id,
                                  ledger.walk())
        return None if found is None else found.entry

    async def _swept(self, thread_id: str, ns: str, ledger: AsyncCheckpointLedger,
                     walk: Walk) -> float | None:
        """The thread's last sweep for a put to record, sweeping first when one is due.

        A namespace's first put lists it in the thread's index, and learns the
        last sweep there (one read, only with a ttl); others know it from their walk.
        A first put may find entries that are no checkpoint (early writes, a lease).
        """
        ttl = self.store.options.ttl
        index = AsyncThreadIndex(self.store, thread_id, ledger.session.user)
        known = walk.swept
        if not walk.judged:
            known = await index.last_sweep() if ttl is not None else None
            if not sweep_due(known, walk.now, ttl):
                await index.register(ns, known)
        if not sweep_due(known, walk.now, ttl):
            return known
        await index.sweep(ns, walk.now)
        return walk.now

    def _new_values(self, session: str, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                    new_versions: ChannelVersions) -> dict[str, Typed | Items | None]:
        """The values this put stores; every other channel keeps its parent's.

        LangGraph's ``__copy__`` (``update_state(config, None, as_node="__copy__")``)
        puts a copy of a checkpoint under that checkpoint's parent with no new
        versions, although its values are the copied checkpoint's: a fork with
        no new versions stores every channel as the copy holds it (a list still as
        a delta where it only grew from the parent's; a channel with no value in
        the copy has none, whatever the parent held).
        """
        values = checkpoint["channel_values"]
        if not new_versions and metadata.get("source") == "fork":
            new_versions = checkpoint["channel_versions"]
        return {ch: self._dumps(session, ch, values[ch]) if ch in values else None
                for ch in new_versions}

    def _dumps(self, session: str, channel: str, value: Any) -> Typed | Items:
        """A channel value serialized (a list item by item, see ``lists.py``; only
        the items new since the last put, see ``_unchanged.py``), or
        InvalidStateValue where the serializer would alter it (``_exact.py``)."""
        if type(value) is list:
            return Items(self._unchanged.serialize(
                session, channel, value,
                lambda item, i: self._exact.dumps(self.serde, channel, item, i)))
        return self._exact.dumps(self.serde, channel, value)

    def _loads(self, value: Typed | ItemList) -> Any:
        if isinstance(value, list):
            # LangGraph's serializer reads a list of msgpack items in one call.
            joined = msgpack_array(value) if type(self.serde) is JsonPlusSerializer else None
            if joined is not None:
                return self.serde.loads_typed(joined)
            return [self.serde.loads_typed(item) for item in value]
        return self.serde.loads_typed(value)

    def _source(self, entry: CheckpointEntry) -> object:
        """What made a checkpoint (its metadata's ``source``: input, loop, update, fork)."""
        return self.serde.loads_typed(entry.metadata).get("source")

    def _listed(self, found: Found, wanted: str | None, before_id: str | None,
                filter: dict[str, Any] | None) -> bool:
        checkpoint_id = found.entry.checkpoint_id
        if wanted is not None and checkpoint_id != wanted:
            return False
        if before_id is not None and checkpoint_id >= before_id:
            return False
        if not filter:
            return True
        metadata = self.serde.loads_typed(found.entry.metadata)
        return all(metadata.get(key) == value for key, value in filter.items())

    async def _tuple(self, ledger: AsyncCheckpointLedger, thread_id: str, ns: str,
                     found: Found, walk: Walk, *, read_for_put: bool = False) -> CheckpointTuple:
        """``read_for_put``: a run's next put holds its lists' items (``_unchanged.py``)."""
        entry = found.entry
        values = await ledger.values(entry, walk)
        checkpoint = self.serde.loads_typed(entry.checkpoint)
        checkpoint["channel_values"] = channel_values = {}
        for ch, stored in values.items():
            if not isinstance(stored, list) or type(self.serde) is not JsonPlusSerializer:
                channel_values[ch] = loaded = self._loads(stored)
                states = None
            else:  # the items read before are copied, not decoded (``_decoded.py``)
                loaded, states = self._decoded.loads(ledger.session.id, ch, stored, self._loads)
                channel_values[ch] = loaded
            if (read_for_put and isinstance(stored, list) and type(loaded) is list
                    and len(loaded) == len(stored)):
                self._unchanged.remember(ledger.session.id, ch, loaded, stored, states)
        writes = [(task, ch, self.serde.loads_typed(value))
                  for task, ch, value, _, _ in pending_writes(await ledger.writes(found))]
        self._early.put(ledger.session.id, entry.checkpoint_id)  # stored: writes land after
        parent = None if entry.parent_id is None else _config(thread_id, ns, entry.parent_id)
        return CheckpointTuple(
            config=_config(thread_id, ns, entry.checkpoint_id), checkpoint=checkpoint,
            metadata=self.serde.loads_typed(entry.metadata), parent_config=parent,
            pending_writes=writes,
        )


def _address(config: RunnableConfig) -> tuple[str, str, str | None]:
    """``(thread_id, checkpoint_ns, checkpoint_id)`` of a config."""
    configurable = config.get("configurable") or {}
    if "thread_id" not in configurable:
        raise ValueError("the config names no thread: pass "
                         "{'configurable': {'thread_id': ...}}")
    checkpoint_id = configurable.get("checkpoint_id")
    address = (thread_text(configurable["thread_id"]),
               str(configurable.get("checkpoint_ns") or ""),
               None if checkpoint_id is None else str(checkpoint_id))
    check_address(*address)
    return address


def _since(head: Head | None) -> int | None:
    """Where the latest checkpoint likely begins, ``head`` being the one this saver
    knows: its entry and the writes stored before it. A read under a lease reads
    a whole page, whose leases its fence check weighs (``runs.py``)."""
    return None if head is None else min([head.entry.seq, *head.entry.early])


def _in_run(config: RunnableConfig) -> bool:
    """Whether a Pregel run made the call (its config carries the run's ``__pregel_``
    keys): a run's puts follow its get_tuple, ``get_state`` and the like put nothing."""
    return any(key.startswith("__pregel_") for key in config["configurable"])


def _config(thread_id: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns,
                             "checkpoint_id": checkpoint_id}}


def _split(session: str) -> tuple[str, str]:
    parts = split_session_id(session)
    assert parts is not None, session
    return parts


@dataclass
class _Put:
    """What one put stores, and what its attempts learned on the way."""

    checkpoint_id: str
    parent_id: str | None
    body: Typed
    metadata: Typed
    channels: dict[str, Any]
    values: dict[str, Typed | Items | None]
    early: list[int] = field(default_factory=list)
    swept: list[float | None] | None = None  # the thread's last sweep, found (or made) once


class _Plan(NamedTuple):
    """Where an attempt appends: after ``entry`` (the parent), at ``version``. A tuple:
    every put makes one, and a frozen dataclass costs several times as much."""

    entry: CheckpointEntry | None
    version: int
    ledger: str | None
    swept: float | None
    first: bool
