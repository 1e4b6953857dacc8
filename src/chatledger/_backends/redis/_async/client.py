"""The asynchronous Redis backend: redis-py calls around :mod:`..calls`.

This is the whole I/O of ``redis://``, ``rediss://`` and ``unix://``: each
operation is one script call planned by :class:`~..calls.Calls` and sent here
with EVALSHA (EVAL once after NOSCRIPT) by the node's sender (:mod:`..senders`),
or, followed by WAIT, on a pooled connection of its own: WAITAOF where the
server has it (Redis 7.2+) and writes an AOF, found out on the store's first
write that waits.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Generic, TypeVar, cast

import redis.asyncio as driver
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import NoScriptError, RedisError, ResponseError

from ...._checks import Check
from ...._errors import BackendError
from ...._options import StoreOptions
from ...._url import StoreURL
from ..._async.base import AsyncBackend
from ...contract import SessionPage
from ...registry import builtin_schemes
from ..calls import SCAN_COUNT, Calls, Replication, ScriptCall
from ..config import ConnectionSettings, connection_settings
from ..errors import DRIVER_ERRORS, classify, translated
from ..health import SCRIPTS, server_checks
from ..permissions import PROBE, can_probe, permission_check, probe_args
from ..senders import AsyncSender
from ..transport import ASYNC_CONNECTIONS, ASYNC_POOL
from .operations import AsyncScriptOperations

__all__ = ["AsyncNode", "AsyncRedisBackend", "Reply", "confirms_fsync"]

T = TypeVar("T")


class AsyncRedisBackend(AsyncScriptOperations, AsyncBackend):
    """One connection pool per store."""

    schemes: ClassVar[tuple[str, ...]] = builtin_schemes(__name__)
    # A Redis string, and one argument of a command, hold at most 512 MiB
    # (proto-max-bulk-len's default); an entry is both.
    max_entry_bytes: ClassVar[int | None] = 512 * 1024 * 1024

    def __init__(self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]) -> None:
        super().__init__(url, options, extra)
        settings = self._open_pool(url, options, extra)
        self.calls = Calls(options, settings.replication)
        self._where = url.redacted()
        self.node = AsyncNode(driver.Redis(connection_pool=self.pool), self.calls, self._where)
        self.client = self.node.client
        self._closed = False

    def _open_pool(
        self, url: StoreURL, options: StoreOptions, extra: dict[str, Any]
    ) -> ConnectionSettings:
        """Make ``self.pool`` for the URL; return the settings it was made from."""
        settings = connection_settings(url, options, extra)
        self.pool: driver.ConnectionPool = ASYNC_POOL(
            max_connections=settings.max_connections,
            timeout=settings.pool_timeout,
            connection_class=ASYNC_CONNECTIONS[settings.transport],
            retry=Retry(NoBackoff(), 0),
            **settings.connection,
        )
        return settings

    supports_users = True

    async def list_sessions(self, prefix: str, cursor: str | None) -> SessionPage:
        scan = self.calls.scan(prefix, cursor)
        while not scan.done:
            scan.feed(*await self._scan(scan.cursor, scan.pattern))
        return scan.page()

    async def purge(self, prefix: str) -> int:
        scan = self.calls.purge_scan(prefix)
        deleted = 0
        while not scan.done:
            found = scan.feed(*await self._scan(scan.cursor, scan.pattern))
            deleted += sum(await self._run_all([self.calls.delete(session) for session in found]))
        return deleted

    async def close(self) -> None:
        self._closed = True
        await self.node.close()

    async def checks(self) -> list[Check]:
        try:
            return await self.node.server_checks()
        except RedisError as exc:
            return [Check("server", "fail", f"{type(exc).__name__}: {exc}")]

    async def corrupt_entry(self, session: str, seq: int, blob: bytes) -> None:
        await self.node.corrupt_entry(session, seq, blob)

    async def _run(self, call: ScriptCall[T]) -> T:
        """The call on the server, confirmed by replicas when it writes and they must.

        Every store call of a standalone (or Sentinel) server comes here, and
        waits here for its reply: the node's script call is awaited without a
        Reply (``AsyncNode.send`` where a WAIT follows), and a driver error is
        translated by ``except`` rather than a context manager, whose bound
        ``__exit__`` the frame would hold for the whole wait.
        """
        await self._before_call()
        node = self.node
        try:
            if call.writes and self.calls.replication.replicas:
                return (await node.send(call)).result()
            return call.parse(await node._script(call))
        except DRIVER_ERRORS as exc:
            raise classify(exc, self._where) from exc

    async def _run_reads(self, calls: list[ScriptCall[T]]) -> list[T]:
        return await self._run_all(calls)

    async def _run_all(self, calls: list[ScriptCall[T]]) -> list[T]:
        """Several calls in one round trip; the first EVAL loads the script for the rest."""
        if not calls:
            return []
        await self._before_call()
        with translated(self._where):
            async with self.client.pipeline(transaction=False) as pipe:
                _queue(pipe, calls)
                replies = await pipe.execute()
        return [call.parse(reply) for call, reply in zip(calls, replies, strict=True)]

    async def _scan(self, cursor: int, pattern: bytes) -> tuple[int, list[bytes]]:
        await self._before_call()
        with translated(self._where):
            next_cursor, keys = await self.client.scan(cursor, match=pattern, count=SCAN_COUNT)
        return int(next_cursor), cast(list[bytes], keys)

    async def _before_call(self) -> None:
        """Every call starts here; Sentinel also makes sure of the master."""
        self._check_open()

    def _check_open(self) -> None:
        if self._closed:
            raise BackendError(f"the store {self._where} is closed")


class AsyncNode:
    """One Redis server as a backend talks to it: its client, and how writes there
    are confirmed. The standalone backend holds one; the cluster backend one per
    primary. Driver errors pass through: the backend says where they happened.
    """

    def __init__(self, client: driver.Redis, calls: Calls, where: str) -> None:
        self.client = client
        self.calls = calls
        self.where = where
        self.sender = AsyncSender(client.connection_pool)  # single commands (..senders)
        self.confirmation: Replication | None = None  # the server's, once asked

    async def send(self, call: ScriptCall[T]) -> Reply[T]:
        """EVALSHA the call (EVAL once after NOSCRIPT, a restarted or flushed server).

        For a write that replicas must confirm, WAIT goes right after it on
        the same connection, and the reply holds its answer too.
        """
        if not (call.writes and self.calls.replication.replicas):  # no WAIT: most stores
            return Reply(call, await self._script(call), None, self.calls.replication,
                         self.where)
        replication = await self._replication()
        replies = await self._confirmed(call, replication, loaded=True)
        if isinstance(replies[0], NoScriptError):
            replies = await self._confirmed(call, replication, loaded=False)
        for answer in replies:
            if isinstance(answer, Exception):
                raise answer
        return Reply(call, replies[0], replies[1:], replication, self.where)

    async def send_all(self, calls: list[ScriptCall[Any]]) -> list[Any]:
        """Calls that write nothing, pipelined in one round trip (the first EVAL loads
        the script for the rest): each one's result, or the error it was answered with."""
        async with self.client.pipeline(transaction=False) as pipe:
            _queue(pipe, calls)
            replies: list[Any] = await pipe.execute(raise_on_error=False)
        return [reply if isinstance(reply, Exception) else call.parse(reply)
                for call, reply in zip(calls, replies, strict=True)]

    async def server_checks(self) -> list[Check]:
        pings = [await self._ping_ms() for _ in range(5)]
        info = await self.client.info()
        loaded = await self.client.script_exists(*(script.sha for script in SCRIPTS))
        return [*server_checks(pings, info, await self._config(), list(loaded)),
                await self._permissions(info)]

    async def _permissions(self, info: dict[str, Any]) -> Check:
        """Whether this user may run every command chatledger sends (Redis 7+ tells)."""
        if not can_probe(info):
            return permission_check(None)
        try:
            denied = await self.client.eval(PROBE, 0, *probe_args(self.calls.namespace))
        except ResponseError as exc:  # NOPERM for EVAL itself
            return permission_check(None, str(exc))
        return permission_check([int(position) for position in denied])

    async def corrupt_entry(self, session: str, seq: int, blob: bytes) -> None:
        keys = self.calls.keys(session)
        first_seq = int(cast(bytes, await self.client.hget(keys.meta, "first_seq")))
        assert first_seq <= seq, "the entry to corrupt was trimmed"
        await self.client.lset(keys.log, seq - first_seq, cast(str, blob))

    async def close(self) -> None:
        await self.sender.close()
        await self.client.aclose()
        await self.client.connection_pool.disconnect()

    async def _replication(self) -> Replication:
        """How writes are confirmed on this server: asked on the first write that waits."""
        wanted = self.calls.replication
        if self.confirmation is None:
            self.confirmation = replace(wanted, waitaof=await confirms_fsync(self.client))
        return self.confirmation

    async def _script(self, call: ScriptCall[Any]) -> Any:
        try:
            return await self.sender.send(("EVALSHA", call.script.sha, len(call.keys),
                                           *call.keys, *call.args))
        except NoScriptError:
            # The script did not run: sending it whole is safe, and caches it again.
            return await self.sender.send(("EVAL", call.script.text, len(call.keys),
                                           *call.keys, *call.args))

    async def _confirmed(self, call: ScriptCall[Any], replication: Replication, *,
                         loaded: bool) -> list[Any]:
        """The script and WAIT in one round trip on one connection."""
        async with self.client.pipeline(transaction=False) as pipe:
            if loaded:
                pipe.evalsha(call.script.sha, len(call.keys), *call.keys, *call.args)
            else:
                pipe.eval(call.script.text, len(call.keys), *call.keys, *call.args)
            for command in replication.commands:
                pipe.execute_command(*command)
            replies: list[Any] = await pipe.execute(raise_on_error=False)
        return replies

    async def _ping_ms(self) -> float:
        started = time.perf_counter()
        await self.client.ping()
        return (time.perf_counter() - started) * 1000

    async def _config(self) -> dict[str, Any] | None:
        """The persistence settings, or None where CONFIG is renamed or disabled."""
        try:
            save = await self.client.config_get("save")
            appendfsync = await self.client.config_get("appendfsync")
        except ResponseError:
            return None
        return {str(name): value for name, value in (*save.items(), *appendfsync.items())}


@dataclass(slots=True)  # not frozen: one is made per call, and frozen fields cost to set
class Reply(Generic[T]):
    """A script's reply, and the replicas' answer when it waited for them."""

    call: ScriptCall[T]
    reply: Any
    confirmed: Any
    replication: Replication
    where: str

    def result(self) -> T:
        """The call's result; BackendUnavailable when too few replicas confirmed it."""
        result = self.call.parse(self.reply)  # a conflict needs no replica to be reported
        if self.confirmed is not None:
            self.replication.check(self.replication.confirmed(self.confirmed), self.where)
        return result


async def confirms_fsync(client: Any) -> bool:
    """Whether the server has WAITAOF (Redis 7.2+) and writes an AOF for it to wait on.

    Without an AOF there is no fsync to wait for, and WAITAOF would refuse
    ``numlocal=1``: WAIT it is, as before 7.2.
    """
    try:
        await client.execute_command("WAITAOF", 0, 0, 0)  # returns at once: nothing to wait for
    except ResponseError:  # ERR unknown command: before 7.2
        return False
    persistence = await client.info("persistence")
    return bool(persistence.get("aof_enabled"))


def _queue(pipe: Any, calls: Sequence[ScriptCall[Any]]) -> None:
    """Queue ``calls`` on ``pipe``: the first as EVAL, which loads its script for the
    rest, sent as EVALSHA (the scripts' text crosses the wire once)."""
    for index, call in enumerate(calls):
        if index == 0:
            pipe.eval(call.script.text, len(call.keys), *call.keys, *call.args)
        else:
            pipe.evalsha(call.script.sha, len(call.keys), *call.keys, *call.args)
