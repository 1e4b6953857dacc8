"""What the failover tests share: writer processes that run while the test fails
a server over, and the audit of what they recorded once it is over.

The audit reads every session twice. First as the writers left it: with
``check_history``, every acknowledged append is there (or counted lost) and
every indeterminate one is there exactly once or absent. Then after retrying
each indeterminate append with the same ids, as an application would once the
store answers again: each is then there exactly once.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from chatledger import History, Message, RetryPolicy, assistant, open_store, user
from chatledger.testing import (
    AppendRecord,
    ConcurrentRun,
    HistoryReport,
    Recorder,
    RedisServer,
    check_history,
    run_concurrently,
)
from tests.redis import _workers

WRITERS = 4
RECOVERY = WRITERS  # the first worker number of the retries, after every writer's own
PATIENT = RetryPolicy(attempts=400, backoff=0.05, max_backoff=0.3, deadline=30)
_RUN_TIMEOUT = 120.0


class Writers:
    """``WRITERS`` processes appending (``run_concurrently``) from a background thread,
    so that the test can fail servers over meanwhile; ``stop()`` ends them."""

    def __init__(self, tmp_path: Path, url: str, namespace: str, sessions: list[str], *,
                 deadline: float, options: Mapping[str, Any]) -> None:
        self.stop_file = tmp_path / "stop-writers"
        args = (url, namespace, sessions, str(self.stop_file), deadline, dict(options))
        self._runs: list[ConcurrentRun] = []
        self._thread = threading.Thread(target=lambda: self._runs.append(run_concurrently(
            _workers.append_until_stopped, WRITERS, args=args, timeout=_RUN_TIMEOUT)))

    def __enter__(self) -> Writers:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop_file.touch()  # a failing test stops its writers too
        self._thread.join(_RUN_TIMEOUT + 10)

    def stop(self) -> ConcurrentRun:
        """Stop the writers and return what they recorded; a worker's error fails the test."""
        self.stop_file.touch()
        self._thread.join(_RUN_TIMEOUT + 10)
        assert self._runs, "the writers never returned"
        run = self._runs[0]
        run.raise_errors()
        return run


@dataclass(frozen=True)
class Audit:
    """The sessions as the writers left them, and after the indeterminate retries."""

    before: HistoryReport
    after: HistoryReport
    indeterminate: int
    present_before: int  # indeterminate appends stored (once, whole) before the retry
    copies_before: Counter[int]  # how many indeterminate appends had 0, 1, 2... copies
    copies_after: Counter[int]

    def summary(self) -> str:
        figures = self.before.figures
        return (f"{figures.appends} appends: {figures.appends_acknowledged} acknowledged, "
                f"{self.indeterminate} indeterminate ({self.present_before} of them stored "
                f"before their retry); {figures.appends_lost} acknowledged appends lost; "
                f"copies of indeterminate appends before the retry "
                f"{dict(self.copies_before)}, after {dict(self.copies_after)}")

    def assert_nothing_lost(self) -> None:
        """With ``wait_replicas``: clean reports, and the failover caught appends in flight."""
        assert self.before.ok, str(self.before)
        assert self.after.ok, str(self.after)
        assert self.indeterminate > 0  # the failover really caught appends in flight
        self.assert_retries_stored_once()

    def assert_never_doubled(self) -> None:
        """Without ``wait_replicas``: loss is reported, never a duplicate or a torn batch."""
        for report in (self.before, self.after):
            assert not report.of_kind("duplicate") and not report.of_kind("torn"), str(report)
        self.assert_retries_stored_once()

    def assert_retries_stored_once(self) -> None:
        """Each indeterminate append: once or absent, then exactly once after its retry."""
        assert set(self.copies_before) <= {0, 1}
        assert self.copies_after == {1: self.indeterminate}


def audit(url: str, namespace: str, sessions: Sequence[str], run: ConcurrentRun,
          options: Mapping[str, Any]) -> Audit:
    """Check the history, retry every indeterminate append with its ids, check again."""
    records = list(run.records)
    unknown = [r for r in records if isinstance(r, AppendRecord) and r.outcome == "indeterminate"]
    # A recorder per retry: they are independent, and a retry of a batch already
    # stored is acknowledged at its old seqs, so no order holds among them.
    retries = [Recorder(RECOVERY + n) for n in range(len(unknown))]
    with open_store(url, namespace=namespace, retry=PATIENT, **options) as store:
        held = {session: store.session(session).read() for session in sessions}
        for record, recorder in zip(unknown, retries, strict=True):
            recorder.append(store.session(record.session), same_batch(record))
        held_after = {session: store.session(session).read() for session in sessions}
    return Audit(
        before=check_history(records, held),
        after=check_history([*records, *(r for rec in retries for r in rec.records)],
                            held_after),
        indeterminate=len(unknown),
        present_before=sum(_copies(held, record) == 1 for record in unknown),
        copies_before=Counter(_copies(held, record) for record in unknown),
        copies_after=Counter(_copies(held_after, record) for record in unknown),
    )


def same_batch(record: AppendRecord) -> list[Message]:
    """The writer's pair again, with its ids: a retry the store recognises."""
    (question_id, answer_id), (question, answer) = record.ids, record.texts
    assert question_id is not None and answer_id is not None
    return [user(question, id=question_id), assistant(answer, id=answer_id)]


def _copies(held: Mapping[str, History], record: AppendRecord) -> int:
    """How many times ``record``'s batch is stored whole; -1 if only in part."""
    stored = Counter(message.id for message in held[record.session].messages)
    counts = {stored[identity] for identity in record.ids}
    return counts.pop() if len(counts) == 1 else -1


def repl_offset(server: RedisServer) -> int:
    """The server's replication offset: it grows with every write it takes."""
    for line in server.info("replication").splitlines():
        if line.startswith(b"master_repl_offset:"):
            return int(line.split(b":")[1])
    raise AssertionError(f"{server!r} reports no master_repl_offset")


def wait_for_writes(server: RedisServer, nbytes: int, what: str, timeout: float = 30.0) -> None:
    """Wait until ``server`` has taken ``nbytes`` more of writes (the writers are at work)."""
    start = repl_offset(server)
    wait_for(lambda: repl_offset(server) - start >= nbytes, what, timeout)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"waited in vain for {what}"
        time.sleep(0.02)
