"""How one command of a store call reaches its server and its reply comes back.

Sync (:class:`Sender`): a pooled connection per command, as redis-py sends
them. Async (:class:`AsyncSender`): the commands of every call in flight share
one connection (multiplexing, as ioredis's auto-pipelining and
StackExchange.Redis do). With a connection per command, a hundred calls in
flight cost a hundred writes, a hundred reads and a hundred wake-ups of the
event loop per round; on one shared connection, the commands queued in one
turn of the loop go out in one write and their replies come back in order,
several per read, to one reader that hands each to its caller. Redis answers
the commands of a connection in the order it received them, which is all the
matching needs.

What a connection per command gave and how it is kept here:

- A call cancelled (its deadline, its caller) while its reply is outstanding:
  the reply is still read and dropped, so no later call takes it for its
  own, and the connection is retired (new commands go to a new one) in case
  it was cancelled because the connection went silent.
- A connection that breaks or times out (the connection's own read timeout,
  the store's ``timeout``) fails every command outstanding on it with the
  driver's error, which the store reports as BackendUnavailable and retries:
  appends carry their ids, so a command that was applied is not applied
  twice. The connection is aborted, not closed: what the socket had not taken
  yet is dropped, never sent to a server that comes back after its callers
  were told it failed.
- An error reply (NOSCRIPT, MOVED, READONLY, ...) goes to its own command only.

Commands that block the server on their connection (``WAIT``, ``WAITAOF``) and
pipelines of several commands keep to pooled connections.
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import time
from collections import deque
from collections.abc import Awaitable
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .transport import packed, packed_bytes, ready

__all__ = ["AsyncSender", "Sender"]

# The loop runs a timer up to its clock's resolution early (asyncio's event loop
# reads the same clock): a timer that finds its line this close to the bound counts
# it as reached, and never a line with more time left than that.
_EARLY = time.get_clock_info("monotonic").resolution


class Sender:
    """Each command on a pooled connection of its own, for the time of its reply."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool

    def send(self, args: tuple[Any, ...]) -> Any:
        """The command's raw reply (an error reply raised).

        What ``client.execute_command`` does, without its wrappers: its retry
        loop (redis-py's retries are off here: the store retries) and its
        per-command metrics and logging hooks cost more client work than the
        command's own packing and parsing.
        """
        pool = self._pool
        connection = pool.get_connection()
        try:
            connection.send_packed_command(packed(connection, args))
            return connection.read_response()
        except ResponseError:  # the reply, read whole: the connection is fit to reuse
            raise
        except BaseException:
            # Failed, or interrupted, between the command and the end of its
            # reply: the reply may still come, and the next command on this
            # connection would read it as its own. The driver drops the
            # connection itself in these cases; this keeps it so whatever its version.
            connection.disconnect()
            raise
        finally:
            pool.release(connection)

    def retire(self) -> None:
        """Nothing to do: each command takes a connection the pool checked."""

    def close(self) -> None:
        """Nothing to do: the pool's connections are the pool's to close."""


class AsyncSender:
    """The single commands of every call in flight, on one shared connection (a line)."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self._line: _Line | None = None
        self._draining: list[_Line] = []  # retired, still owed replies
        self._opening = asyncio.Lock()
        self._retired = 0  # retire() calls so far: a connect that spans one is not used
        self._closed = False

    def send(self, args: tuple[Any, ...]) -> Awaitable[Any]:
        """The command's raw reply (an error reply raised), to await.

        Not a coroutine of its own while the line is busy (calls in flight): the
        line's wait is what the caller awaits, one frame less per command held
        for the collector to walk.
        """
        line = self._line
        if line is None or not line.usable or line.idle:
            return self._send_checked(args)
        return line.send(packed_bytes(line.connection, args))

    async def _send_checked(self, args: tuple[Any, ...]) -> Any:
        """``send`` on a line that is missing, retired or idle (checked as a pool
        checks a connection before lending it)."""
        line = self._line
        if line is None or not line.usable or (line.idle and not await ready(line.connection)):
            line = await self._open(line)
        return await line.send(packed_bytes(line.connection, args))

    def retire(self) -> None:
        """New commands go to a new connection; the current one closes once its
        outstanding replies are read (Sentinel: the master moved)."""
        self._retired += 1
        line, self._line = self._line, None
        if line is not None:
            line.retire()
            self._draining.append(line)

    async def close(self) -> None:
        """Fail whatever is outstanding and close the connections."""
        self._closed = True  # a connect under way is dropped (_connected)
        lines, self._draining = self._draining, []
        if self._line is not None:
            lines.append(self._line)
            self._line = None
        for line in lines:
            line.fail(RedisConnectionError("the store was closed"))
        for line in lines:
            await line.wait_closed()

    async def _open(self, unfit: _Line | None) -> _Line:
        """A new line in place of ``unfit`` (closed, retired, or found closed by the
        server while idle, as a pool checks a connection before lending it).

        The line another caller opened meanwhile is kept only if it still takes
        commands: it may have broken while this caller waited its turn.
        """
        async with self._opening:  # one connect however many calls arrive at once
            line = self._line
            if line is None or line is unfit or not line.usable:
                if line is not None:
                    line.retire()
                    self._draining.append(line)
                    self._line = None  # a connect that fails leaves no line behind
                self._draining = [old for old in self._draining if not old.closed]
                line = self._line = _Line(await self._connected())
            return line

    async def _connected(self) -> Any:
        """A new connection, made wholly after the last :meth:`retire` (one under way
        when the master moved may have been told the old master's address), and
        before :meth:`close` (which would not close it)."""
        while True:
            retired = self._retired
            connection = self._pool.make_connection()
            await connection.connect()
            if self._closed:
                await connection.disconnect(nowait=True)
                raise RedisConnectionError("the store was closed")
            if retired == self._retired:
                return connection
            await connection.disconnect(nowait=True)


class _Line:
    """One connection and the replies owed on it, in the order they were asked for."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.usable = True  # takes new commands
        self._loop = asyncio.get_running_loop()
        self._outgoing: list[bytes] = []  # commands written at the end of this turn of the loop
        self._owed: deque[asyncio.Future[Any]] = deque()  # one per command written or to be
        self._reader: asyncio.Task[None] | None = None
        self._closing: asyncio.Task[None] | None = None
        # How long a reply may be awaited (the store's timeout), kept by one timer
        # per line rather than one per reply read (_watch).
        self._timeout: float | None = connection.socket_timeout
        self._since = 0.0  # when the reader last started waiting or got a reply
        self._watch: asyncio.TimerHandle | None = None
        # The flush's context: one for the line, not a copy of the caller's per flush.
        self._context = contextvars.Context()

    async def send(self, command: bytes) -> Any:
        future = self._loop.create_future()
        if not self._outgoing:
            self._loop.call_soon(self._flush, context=self._context)
        self._outgoing.append(command)
        self._owed.append(future)
        if self._reader is None:
            self._reader = self._loop.create_task(self._read())
            self._since = self._loop.time()
            if self._timeout and self._watch is None:
                self._watch = self._loop.call_at(self._since + self._timeout, self._overdue,
                                                  context=self._context)
        try:
            return await future
        except asyncio.CancelledError:
            if future.cancelled():  # its reply is still owed: read and dropped
                self.retire()
            raise

    def retire(self) -> None:
        """Take no new commands; close once nothing is owed."""
        self.usable = False
        if not self._owed:
            self._close()

    def fail(self, error: BaseException) -> None:
        """Every command owed fails with ``error``; the connection closes."""
        self.usable = False
        self._outgoing.clear()
        owed, self._owed = self._owed, deque()
        for future in owed:
            if not future.done():
                future.set_exception(error)
        if self._reader is not None and self._reader is not asyncio.current_task():
            self._reader.cancel()
        writer = self.connection._writer
        if writer is not None:  # what the socket has not taken yet is never sent: the
            writer.transport.abort()  # callers were told their commands failed
        self._close()

    @property
    def idle(self) -> bool:
        """Nothing owed: whatever the connection holds to read, no command asked for."""
        return not self._owed

    @property
    def closed(self) -> bool:
        return self._closing is not None

    async def wait_closed(self) -> None:
        if self._closing is not None:
            await self._closing

    def _flush(self) -> None:
        outgoing, self._outgoing = self._outgoing, []
        if not outgoing:  # failed since: nothing left to send
            return
        writer = self.connection._writer
        if writer is None or writer.is_closing():
            self.fail(RedisConnectionError("the connection closed before the command was sent"))
            return
        # The transport takes it all at once, and sends what the socket takes now;
        # a reply that cannot come (the rest never sent) is the reader's timeout.
        writer.writelines(outgoing)

    async def _read(self) -> None:
        """Hand each reply to the command that is owed it, in order, while any is owed."""
        connection = self.connection
        owed = self._owed
        try:
            while owed:
                try:
                    # No timer per reply (math.inf): _overdue bounds the wait. Not
                    # disconnect_on_error: the driver's disconnect closes gracefully,
                    # sending what the socket has not taken yet; fail() drops it.
                    reply: Any = await connection.read_response(
                        timeout=math.inf, disconnect_on_error=False)
                except ResponseError as error:  # an error reply: the command's own
                    reply = error
                self._since = self._loop.time()
                future = owed.popleft()
                if future.done():  # its caller was cancelled
                    continue
                if isinstance(reply, ResponseError):
                    future.set_exception(reply)
                else:
                    future.set_result(reply)
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # every owed command hears of it
            self.fail(error if isinstance(error, RedisError)
                      else RedisConnectionError(f"reading replies failed: {error!r}"))
        finally:
            self._reader = None
        if not self.usable:
            self._close()

    def _overdue(self) -> None:
        """The timer: fail the line if no reply came within the timeout while one is owed."""
        self._watch = None
        if not self._owed or self.closed:
            return
        assert self._timeout is not None
        due = self._since + self._timeout
        if self._loop.time() >= due - _EARLY:
            host = self.connection._host_error()
            self.fail(RedisTimeoutError(f"Timeout reading from {host}"))
        else:
            self._watch = self._loop.call_at(due, self._overdue, context=self._context)

    def _close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None
        if self._closing is None:
            self._closing = self._loop.create_task(self.connection.disconnect(nowait=True))
