"""Runs on one thread, one at a time: the lease, its token and the fence. No I/O.

**The lease** is a ledger entry in the thread's root namespace session, the
session that holds the thread's checkpoints (``layout.py``): a run *takes*
the thread by appending a ``Lease`` entry with ``expect_version`` at the
version it read, so of two runs that read the thread free, one append lands
and the other gets ConflictError, reads again and finds the thread held. A
lease lasts ``until`` a time of the store's clock (``options.clock()``, the
clock that judges expiry); its holder renews it while it runs and releases it
when done, and a holder that died stops renewing, so its lease expires and the
next run takes the thread over.

**The token** of a run is the seq of its taking entry (and the session's
ledger id): the next run's token is higher, so tokens order the runs. It
travels in ``config["configurable"]`` (``RUN_KEY``; LangGraph copies no key
starting ``__`` into a checkpoint's metadata) to the saver.

**The fence.** Why in the checkpoint session and not in a session of its own:
a put is one append with ``expect_version`` on that session, so a check made
on what the put read holds at the moment the checkpoint is stored, with no
extra round trip and no lock. The saver refuses (``LeaseLost``) a put of a
run whose token is lower than a taking entry it read, or than the token the
latest checkpoint was stored under; a taking entry newer than the latest
checkpoint is among the entries every put and ``get_tuple`` reads anyway.
When the put appends without reading (it knows the head, ``heads.py``), it
does so at the version its own run last read or wrote, kept per token: a run
that took the thread since moved the version on, so the append fails and the
put reads. By induction, no checkpoint is stored under a token lower than one
that took the thread before it. Writes (``put_writes``) are appended without
``expect_version`` (parallel tasks write at once), so they carry the token
instead, and a walk voids a write stored after a taking entry whose token is
higher than the write's: it is as if never stored.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from .._errors import ConfigError, ConflictError
from ._entries import Lease

__all__ = [
    "RUN_KEY",
    "STRATEGIES",
    "LeaseLost",
    "RunToken",
    "ThreadBusy",
    "check_fence",
    "head_key",
    "holding",
    "run_token",
    "seconds",
    "strategy",
]

RUN_KEY = "__chatledger_run"
"""The key of ``config["configurable"]`` holding the run's token."""

STRATEGIES = ("reject", "enqueue")
"""The ``multitask_strategy`` values offered, as LangGraph Platform names them."""

_NOT_OFFERED = {
    "interrupt": "it would have to stop a run in another process, and a model or tool "
                 "call already made there would run to its end unrecorded",
    "rollback": "it would also delete the first run's checkpoints, and a ledger never "
                "deletes what it acknowledged; and it stops that run as interrupt would",
}


class ThreadBusy(ConflictError):
    """A run refused because another run holds the thread.

    ``multitask_strategy="reject"``: raised before the graph runs, so no model
    or tool call was made and nothing of the run (not even its input) is
    stored. ``"enqueue"``: raised when the thread was still held after waiting
    ``waited`` seconds. ``holder`` names the run holding it (None: unknown).
    """

    def __init__(self, thread_id: str, *, holder: str | None, message: str,
                 waited: float | None = None) -> None:
        super().__init__(thread_id, 0, 0)
        self.thread_id = thread_id
        self.holder = holder
        self.waited = waited
        self.args = (message,)


class LeaseLost(ThreadBusy):
    """This run's lease expired and another run took the thread over, or the
    thread was deleted under it: the saver refused to store anything more of
    this run (its checkpoints stored before the takeover stay)."""


@dataclass(frozen=True)
class RunToken:
    """A run's place in the order of runs on its thread: the seq of its taking
    entry in the root namespace session, whose ledger is ``ledger``."""

    seq: int
    ledger: str

    def __str__(self) -> str:
        return f"{self.seq}@{self.ledger}"

    @classmethod
    def parse(cls, text: str) -> RunToken:
        seq, sep, ledger = str(text).partition("@")
        if not sep or not seq.isdigit():
            raise ValueError(f"config['configurable'][{RUN_KEY!r}] is not a run token: {text!r}")
        return cls(int(seq), ledger)


def run_token(config: Mapping[str, Any], checkpoint_ns: str) -> RunToken | None:
    """The token of the run ``config`` belongs to; None outside a lease or in a
    subgraph's namespace (the lease and its fence are the root namespace's)."""
    raw = (config.get("configurable") or {}).get(RUN_KEY)
    return None if raw is None or checkpoint_ns else RunToken.parse(raw)


def head_key(session: str, token: RunToken | None) -> str:
    """Where a saver remembers a head: per run under a lease, so that a head one
    run read is never the version another run's put appends at."""
    return session if token is None else f"{session}\n{token}"


def holding(latest: Lease | None, now: float) -> Lease | None:
    """The entry of the run holding the thread, None when it is free: never
    taken, released, or its lease expired at ``now``."""
    if latest is None or latest.until is None or now >= latest.until:
        return None
    return latest


def check_fence(token: RunToken, *, thread_id: str, ledger: str | None,
                leases: Iterable[Lease], latest_run: int | None) -> None:
    """Raise LeaseLost unless the run of ``token`` may still write: the session
    is the ledger it took, no run took the thread after it among ``leases``
    (entries a read saw), and the latest checkpoint is not a later run's."""
    # Any entry of a later run, its taking entry or a renewal: a prune restates the
    # holder's lease as a renewal, its taking entry trimmed away.
    taken = [lease.seq for lease in leases if lease.holder > token.seq]
    if ledger != token.ledger:
        why = "the thread was deleted or lost since this run took it"
    elif taken or (latest_run is not None and latest_run > token.seq):
        why = "its lease expired and another run took the thread over"
    else:
        return
    raise LeaseLost(thread_id, holder=None, message=f"thread {thread_id!r}: this run may "
                    f"store nothing more: {why}")


def strategy(name: str) -> str:
    """``name`` if it is an offered ``multitask_strategy``, else a ConfigError saying why not."""
    if name in STRATEGIES:
        return name
    if name in _NOT_OFFERED:
        raise ConfigError(f"multitask_strategy {name!r} is not offered: {_NOT_OFFERED[name]} "
                          f"(offered: {', '.join(STRATEGIES)})")
    raise ConfigError(f"multitask_strategy must be one of {', '.join(STRATEGIES)}, "
                      f"not {name!r}")


def seconds(name: str, value: float | timedelta, *, minimum: float,
            finite: bool = False) -> float:
    """A duration option in seconds (a number or a timedelta), at least ``minimum``;
    ``finite``: not infinite either (a lease is stamped in the store as a time, and
    JSON holds no infinity)."""
    number = value.total_seconds() if isinstance(value, timedelta) else value
    if isinstance(number, bool) or not isinstance(number, (int, float)) or not (
            minimum <= number <= (math.inf if not finite else sys.float_info.max)):
        raise ConfigError(f"{name} must be a {'finite ' if finite else ''}number of seconds or "
                          f"a timedelta of at least "
                          f"{minimum}, got {value!r}")
    return float(number)
