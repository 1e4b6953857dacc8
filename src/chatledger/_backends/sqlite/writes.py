"""A store's writes on SQLite: one connection, writers in turn, commits shared.

Left to SQLite, a second writer of the same store (LangGraph's ``put`` and
``put_writes`` on two threads) finds the file locked, and its busy handler
sleeps 1 ms, then 2, then 5, before it looks again; and each write pays its
own commit, one ``fsync`` of the WAL. Here the store's writers take turns on
one connection, the next woken the moment the one before is done, and a
writer that finds others waiting leaves the transaction open for them: the
last of the group commits for all of them (group commit). Each writer that
joins a group runs inside a savepoint of its own, so one that fails is undone
alone (the first needs none: it fails alone). None is acknowledged before the
commit that holds it returned, so an acknowledged write is on disk
(``synchronous=FULL``) as before, and a group whose commit fails fails every
writer in it (each retries as a failed write does). Other processes are still
ordered by SQLite's lock, busy wait included.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from contextlib import suppress

from ..._errors import BackendError, BackendUnavailable

__all__ = ["MAX_GROUP", "GroupCommit"]

MAX_GROUP = 32
"""Writers one commit holds at most: past it, the commit does not wait for more."""


_ORPHANED = 0.05  # seconds a writer waits for its group before checking it has a writer


class _Group:
    """Writers whose statements one transaction holds, until it commits or fails."""

    def __init__(self) -> None:
        self.members = 0
        self.lost: BaseException | None = None  # SQLite ended the transaction itself
        self.failed: BaseException | None = None
        self._ended = False
        # Made only when a writer leaves the group open for the next (under the turn,
        # before it gives the turn back): a lone writer ends its own group, and an
        # Event per write is a few microseconds of an append's own CPU.
        self._done: threading.Event | None = None

    def left_open(self) -> None:
        """A writer will wait for another to end the group (call it under the turn)."""
        if self._done is None:
            self._done = threading.Event()

    def finish(self, failed: BaseException | None) -> None:
        self.failed = failed
        self._ended = True
        if self._done is not None:
            self._done.set()

    def wait(self, seconds: float) -> bool:
        """Whether the group ended within ``seconds``."""
        if self._ended:
            return True
        if self._done is None:  # not left open by this writer: made here, off the turn, so
            self.left_open()    # an end just missed costs one wait of ``seconds``, no hang
        assert self._done is not None
        return self._done.wait(seconds)

    def check(self) -> None:
        """Raise (a copy of) why the group did not commit, if it did not."""
        if self.failed is not None:
            failed = self.failed
            copy = type(failed)(*failed.args) if isinstance(failed, sqlite3.Error) else (
                sqlite3.OperationalError(f"the transaction holding this write failed: {failed}"))
            raise copy from failed


class GroupCommit:
    """Turns on the store's write connection, made by ``connect`` when first needed."""

    def __init__(self, connect: Callable[[], sqlite3.Connection], where: str,
                 timeout: float) -> None:
        self._connect = connect
        self._where = where
        self._timeout = timeout
        self._turn = threading.Lock()
        self._count = threading.Lock()
        self._waiting = 0
        self._db: sqlite3.Connection | None = None
        self._group: _Group | None = None
        self._closed = False
        self.waits = 0
        """How many writers found another writer at work and waited for their turn."""
        self.commits = 0
        """How many transactions committed (one per group of writers)."""

    def turn(self) -> _Turn:
        """The write connection, in a transaction, for the caller's statements; on
        leaving, they are committed (with the group's) or, on an error, undone."""
        return _Turn(self)

    def lend_idle(self) -> sqlite3.Connection | None:
        """The write connection for one read, with the turn taken, when no writer is at
        work, none waits and no group is open (so nothing uncommitted is seen); None
        otherwise, without waiting. Give the turn back with :meth:`end_read`.

        Why: SQLite drops a connection's page cache once another connection has
        committed, so a read on a connection of its own after each write reads its
        pages again (a 10-turn thread's ``get_tuple``: some 40 µs of 300), where the
        write connection still holds the pages it wrote. A writer that comes while
        the read runs waits for that one statement.
        """
        if self._db is None or self._waiting or not self._turn.acquire(blocking=False):
            return None
        # A group's COMMIT and ROLLBACK may both have failed, leaving its rows in an open
        # transaction with no group: never lent then, or the read would see them.
        if self._group is not None or self._closed or self._db is None \
                or self._db.in_transaction:
            self._turn.release()
            return None
        return self._db

    def end_read(self) -> None:
        """The read :meth:`lend_idle` lent the write connection for is done."""
        self._turn.release()

    def _leave(self, db: sqlite3.Connection, group: _Group, first: bool,
               error: BaseException | None) -> None:
        """A writer's statements are done (``error``: they failed, and are undone)."""
        if error is not None:
            if first:  # nothing of others' to keep: no savepoint was needed
                _roll_back(db)
            else:
                _undo_writer(db)
            if not db.in_transaction:  # nothing left (SQLite may have rolled back others' too)
                group.lost = error
        self._end(db, group)
        if error is None:
            self._wait(group)

    def close(self) -> None:
        """Close the connection once the writer at work is done (committing the
        writes of its group); later turns raise BackendError."""
        self._turn.acquire()
        self._closed = True
        if self._group is not None and self._db is not None:
            self._finish(self._db, self._group)  # gives the turn back: take it again
            self._turn.acquire()
        if self._db is not None:
            self._db.close()
            self._db = None
        self._turn.release()

    def _begin(self) -> tuple[sqlite3.Connection, _Group]:
        self._take_turn()
        try:
            if self._closed:
                raise BackendError(f"the store {self._where} is closed")
            if self._db is None:
                self._db = self._connect()
            if self._group is None:
                self._db.execute("BEGIN IMMEDIATE")
                self._group = _Group()
        except BaseException:
            self._turn.release()
            raise
        self._group.members += 1
        return self._db, self._group

    def _wait(self, group: _Group) -> None:
        """Wait for the group to end. The writer it was left open for may have given
        up waiting for its turn meanwhile (its timeout): then whoever finds the turn
        free ends the group, this writer as well as the next."""
        while not group.wait(_ORPHANED):
            if self._turn.acquire(blocking=False):
                if self._group is group and self._db is not None:
                    self._finish(self._db, group)
                else:
                    self._turn.release()
        group.check()

    def _take_turn(self) -> None:
        with self._count:
            self._waiting += 1
        try:
            if not self._turn.acquire(blocking=False):
                with self._count:
                    self.waits += 1
                if not self._turn.acquire(timeout=self._timeout):
                    raise BackendUnavailable(
                        f"the store {self._where}: its other writes held the database "
                        f"for {self._timeout} s")
        finally:
            with self._count:
                self._waiting -= 1

    def _end(self, db: sqlite3.Connection, group: _Group) -> None:
        """Leave the transaction open for the next writer, or end it for the group."""
        with self._count:
            others = self._waiting
        if group.lost is None and others and group.members < MAX_GROUP:
            group.left_open()
            self._turn.release()  # the next writer's statements join this transaction
            return
        self._finish(db, group)

    def _finish(self, db: sqlite3.Connection, group: _Group) -> None:
        """Commit the group's transaction (roll it back if it failed), give the turn back."""
        self._group = None
        failed: BaseException | None = group.lost
        try:
            if failed is None:
                db.execute("COMMIT")
                self.commits += 1  # under the turn
        except sqlite3.Error as exc:
            failed = exc
        finally:
            if failed is not None:
                _roll_back(db)
            self._turn.release()
            group.finish(failed)


class _Turn:
    """One writer's turn (:meth:`GroupCommit.turn`): a class, not a generator, since
    every write takes one and a generator's frame costs more."""

    __slots__ = ("_db", "_first", "_group", "_writes")

    def __init__(self, writes: GroupCommit) -> None:
        self._writes = writes

    def __enter__(self) -> sqlite3.Connection:
        db, group = self._db, self._group = self._writes._begin()
        self._first = group.members == 1
        if not self._first:
            try:
                db.execute("SAVEPOINT writer")
            except BaseException as exc:
                self._writes._leave(db, group, False, exc)
                raise
        return db

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        error = exc
        if error is None and not self._first:
            try:
                self._db.execute("RELEASE writer")
            except BaseException as failed:
                error = failed
        self._writes._leave(self._db, self._group, self._first, error)
        if error is not None and error is not exc:
            raise error  # the block's own error goes on by itself


def _undo_writer(db: sqlite3.Connection) -> None:
    """Undo a failed writer's statements, keeping the group's.

    SQLite rolls back the whole transaction by itself on some errors (disk
    full, I/O error); there is then nothing left to undo, and the caller sees
    that the transaction is gone.
    """
    with suppress(sqlite3.Error):
        if db.in_transaction:
            db.execute("ROLLBACK TO writer")
            db.execute("RELEASE writer")


def _roll_back(db: sqlite3.Connection) -> None:
    with suppress(sqlite3.Error):
        if db.in_transaction:
            db.execute("ROLLBACK")
