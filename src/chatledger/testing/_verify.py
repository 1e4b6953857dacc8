"""A bounded chaos run against a deployment, then the history check (``verify_deployment``).

Worker processes append user+assistant turns and read windows of a few shared
sessions, in a scratch namespace, while a fault proxy in front of the server
injects outages, hangs, latency, resets, lost, cut and dripping replies.
Every operation is recorded; after the run a clean (unproxied) store reads
every session, and ``check_history`` says whether an acknowledged append was
lost, duplicated, torn or reordered, or a read went backwards. Only the URL
given and loopback are ever contacted. ``chatledger verify`` is this function.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import secrets
import textwrap
import time
from contextlib import ExitStack
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

from .._errors import BackendError, ChatLedgerError
from .._messages import assistant, user
from .._options import RetryPolicy
from .._results import History
from .._sync.store import Session, Store, open_store
from .._url import parse_url
from ._checker import check_history
from ._concurrency import ConcurrentRun, run_concurrently
from ._fault_schedule import Fault, FaultPlayer, plan
from ._proxy import FaultProxy
from ._recorder import Recorder
from ._report import HistoryReport

MAX_DURATION = 600.0
SLOTS = 3  # conversations written at once, by every worker: fewer than workers
TURNS_PER_CONVERSATION = 50
WINDOW = 10
WHOLE_READ_SHARE = 0.05
# Short enough that a fault shows as a failed or indeterminate operation within
# a second, instead of being retried away for the store's default 10 s.
WORKER_TIMEOUT = 0.5
WORKER_DEADLINE = 1.0
# Spawning the workers (a fresh interpreter each, importing chatledger) and the
# last operations past the duration; the run is killed after this much more.
STARTUP_ALLOWANCE = 30.0
FINISH_ALLOWANCE = 10.0

_PROXIED = {"redis": 6379, "postgresql": 5432, "postgres": 5432}  # with their default ports
_NOT_PROXIED = {
    "rediss": "TLS: the server's certificate names its host, not the proxy's loopback port",
    "unix": "a Unix socket: the proxy forwards TCP only",
    "redis+sentinel": "Sentinel: clients follow the master the sentinels name, around any proxy",
    "sqlite": "SQLite is a file, with no network in between",
    "memory": "memory:// lives in one process, with no network in between",
}
# A worker process that died before it could report (run_concurrently's words), and why
# that usually is.
_SILENT_EXIT = "without reporting"
_SILENT_WORKER = (
    "a worker process that exits without reporting printed its traceback on stderr; "
    "a script must call verify_deployment under `if __name__ == \"__main__\":`, since every "
    "spawned worker imports it")


@dataclass(frozen=True)
class Verification:
    """A finished run: what was injected, what the workers recorded, what the check found."""

    url: str
    """The store's URL, password hidden."""
    namespace: str
    """The scratch namespace the run wrote in."""
    seed: int
    processes: int
    duration: float
    why_not_proxied: str | None
    """Why no fault was injected (the URL's kind, or ``faults=False``); None when some were."""
    faults: tuple[Fault, ...]
    faults_hit: int
    """How often the faults touched the traffic (connections refused or reset, replies lost)."""
    run: ConcurrentRun
    report: HistoryReport
    kept: bool
    purge_error: str | None = None
    """Why the scratch sessions could not be purged, if they could not."""

    @property
    def ok(self) -> bool:
        """No anomaly in the history, every worker ran to the end, and some append was
        acknowledged (a run that exercised nothing proves nothing)."""
        return (self.report.ok and not self.run.errors
                and self.report.figures.appends_acknowledged > 0)

    @property
    def verdict(self) -> str:
        """``ok: ...`` or ``FAILED: ...`` and why: the last line ``chatledger verify`` prints."""
        if self.run.errors:
            return (f"FAILED: {len(self.run.errors)} worker(s) stopped before the end: "
                    f"the run proves nothing")
        if not self.report.ok:
            found = ", ".join(f"{kind} {n}" for kind, n in sorted(self.report.counts.items()))
            return f"FAILED: this deployment broke a promise ({found})"
        if self.report.figures.appends_acknowledged == 0:
            return (f"FAILED: no append was acknowledged in {self.report.figures.appends} "
                    f"attempted: the run proves nothing")
        return "ok: every acknowledged append was kept, once, whole and in order"

    def describe(self) -> list[str]:
        """The run as ``chatledger verify`` prints it, line by line, the verdict last."""
        stopped = [f"worker {error.worker} stopped: {error.error}" for error in self.run.errors]
        return [*self._lines(), *stopped, self.verdict]

    def __str__(self) -> str:
        """The verdict first, then why: each stopped worker's error and traceback, then
        the run and its figures. What ``assert outcome.ok, outcome`` shows."""
        lines = [self.verdict, *(textwrap.indent(str(error), "  ") for error in self.run.errors)]
        if any(error.error.endswith(_SILENT_EXIT) for error in self.run.errors):
            lines.append(f"  {_SILENT_WORKER}")
        if self.purge_error is not None:
            lines.append(self.purge_error)
        return "\n".join([*lines, *self._lines()])

    def _lines(self) -> list[str]:
        """What was run, the faults and the history check's report."""
        lines = [f"chatledger verify {self.url}: {self.processes} processes for "
                 f"{self.duration:g} s, namespace {self.namespace!r}, seed {self.seed}"]
        if self.why_not_proxied is None:
            lines.append(f"faults: {len(self.faults)} injected, which hit the traffic "
                         f"{self.faults_hit} times (connections refused or reset, replies "
                         f"lost or cut)")
            lines += [f"  {fault.describe()}" for fault in self.faults]
        else:
            lines.append(f"faults: none ({self.why_not_proxied})")
        lines.append(str(self.report))
        if self.kept:
            lines.append(f"kept: the sessions verify-<slot>-<n> of namespace {self.namespace!r}")
        return lines


def verify_deployment(url: str, *, namespace: str = "default", processes: int = 4,
                      duration: float = 10.0, seed: int | None = None, faults: bool = True,
                      keep: bool = False, retry: RetryPolicy | None = None) -> Verification:
    """Prove a deployment keeps its promises under faults: a bounded chaos run.

    Args:
        url: the store to verify. Faults are injected on a ``redis://`` URL with
            one host (the proxy needs a TCP hop to stand in); elsewhere the
            workload runs without them and ``why_not_proxied`` says why.
        namespace: the run writes in ``<namespace>-verify-<random>``, purged at
            the end unless ``keep``.
        processes: worker processes (threads on ``memory://``).
        duration: seconds the workers run, at most 600.
        seed: the fault plan's and the workload's seed (random by default; the
            result names it, and the same seed plays the same faults).
        faults: False runs the workload on a healthy connection.
        keep: keep the scratch sessions.
        retry: the retry policy of the store that reads the sessions back.

    Returns:
        What was injected and what the history check found; ``ok`` is the verdict.

    Raises:
        ValueError: ``processes`` or ``duration`` out of range.
        ChatLedgerError: the store cannot be opened or read back.
    """
    if not 1 <= processes <= 64 or not 0 < duration <= MAX_DURATION:
        raise ValueError(f"processes must be 1 to 64 and duration 0 to {MAX_DURATION:g} s, "
                         f"not {processes} and {duration:g}")
    seed = secrets.randbelow(2**31) if seed is None else seed
    scratch = f"{namespace}-verify-{secrets.token_hex(3)}"
    url = _shared(_without(url, "namespace"), scratch)
    options = {"namespace": scratch} | ({} if retry is None else {"retry": retry})
    with ExitStack() as stack:
        store = stack.enter_context(open_store(url, **options))
        why_not = why_not_proxied(url) if faults else "faults=False"
        workload = _Workload(_without(url, "timeout"), scratch, duration, seed)
        injected, hit, run = _chaos(stack, workload, processes) if why_not is None else (
            (), 0, _work(workload, processes))
        report = check_history(run.records, _final_reads(store, run))
        purge_error = None if keep else _purge(store)
    return Verification(store.url, scratch, seed, processes, duration, why_not, injected, hit,
                        run, report, keep, purge_error)


def why_not_proxied(url: str) -> str | None:
    """Why faults cannot be injected between a client and ``url``; None when they can."""
    parsed = parse_url(url)
    if parsed.scheme in _PROXIED and len(parsed.hosts) == 1:
        return None
    return _NOT_PROXIED.get(parsed.scheme, f"{parsed.scheme}:// is not a single Redis or "
                                           "PostgreSQL host")


@dataclass(frozen=True)
class _Workload:
    """What each worker does, sent to its process (so: plain, picklable values)."""

    url: str
    namespace: str
    duration: float
    seed: int


class _Conversations:
    """Which session a worker writes to in each slot: the slot's current conversation.

    Every worker writes to the same few slots, so they contend for the same
    ledgers. A conversation full (seen at TURNS_PER_CONVERSATION turns) gives way
    to the slot's next one: the checker's cost grows with the square of a
    session's operations, and this keeps it linear in the run's length.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._generation = [0] * SLOTS

    def session(self, slot: int) -> Session:
        return self._store.session(f"verify-{slot}-{self._generation[slot]}")

    def seen(self, slot: int, history: History) -> None:
        """What a read of the slot's current conversation returned."""
        if history.version >= 2 * TURNS_PER_CONVERSATION:
            self._generation[slot] += 1


def _turns(worker: int, recorder: Recorder, workload: _Workload) -> None:
    """Append turns and read windows until the duration is up; a fault ends one operation."""
    rng = random.Random(f"{workload.seed}/{worker}")
    with open_store(workload.url, namespace=workload.namespace, timeout=WORKER_TIMEOUT,
                    retry=RetryPolicy(deadline=WORKER_DEADLINE)) as store:
        conversations = _Conversations(store)
        end, turn = time.monotonic() + workload.duration, 0
        while time.monotonic() < end:
            slot = rng.randrange(SLOTS)
            session = conversations.session(slot)
            # The recorder keeps each failure; an agent would carry on too.
            with contextlib.suppress(BackendError):
                recorder.append(session, [user(f"w{worker} t{turn} q"),
                                          assistant(f"w{worker} t{turn} a")])
            with contextlib.suppress(BackendError):
                whole = rng.random() < WHOLE_READ_SHARE
                history = recorder.read(session) if whole else recorder.read(session, last=WINDOW)
                conversations.seen(slot, history)
            turn += 1


def _chaos(stack: ExitStack, workload: _Workload,
           processes: int) -> tuple[tuple[Fault, ...], int, ConcurrentRun]:
    """The workload through a fault proxy, with the plan of ``workload.seed`` played on it."""
    proxy = stack.enter_context(FaultProxy(*_upstream(workload.url)))
    player = FaultPlayer(proxy, plan(workload.seed, workload.duration))
    stack.callback(player.stop)  # also when the run is interrupted
    player.start()
    run = _work(dataclasses.replace(workload, url=_through(workload.url, proxy.url_netloc)),
                processes)
    player.stop()
    return tuple(player.played), proxy.faults_injected, run


def _work(workload: _Workload, processes: int) -> ConcurrentRun:
    # memory:// is private to a process: its workers can only be threads of this one.
    in_processes = parse_url(workload.url).scheme != "memory"
    return run_concurrently(_turns, processes, processes=in_processes, args=(workload,),
                            timeout=STARTUP_ALLOWANCE + workload.duration + FINISH_ALLOWANCE)


def _final_reads(store: Store, run: ConcurrentRun) -> dict[str, History]:
    """Every session as it is after the run, read through a clean connection: those
    the workers wrote to, and any other the namespace holds (it should hold none)."""
    names = {record.session for record in run.records} | set(store.sessions())
    return {name: store.session(name).read() for name in sorted(names)}


def _purge(store: Store) -> str | None:
    """Purge the scratch namespace; why it failed, if it did (the report matters more)."""
    try:
        store.purge()
    except ChatLedgerError as exc:
        return f"could not purge namespace {store.namespace!r}: {exc}"
    return None


# -- URLs ---------------------------------------------------------------------------------


def _upstream(url: str) -> tuple[str, int]:
    parsed = parse_url(url)
    host, port = parsed.hosts[0]
    return host or "127.0.0.1", port or _PROXIED[parsed.scheme]


def _split(url: str) -> tuple[str, str, str, str]:
    """Scheme, user info (with its ``@``), hosts, and the rest (path and query)."""
    scheme, _, rest = url.partition("://")
    end = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    userinfo, at, hosts = rest[:end].rpartition("@")
    return scheme, userinfo + at, hosts, rest[end:]


def _through(url: str, netloc: str) -> str:
    """The same URL, credentials and options, pointed at ``netloc`` (the proxy)."""
    scheme, userinfo, _, tail = _split(url)
    return f"{scheme}://{userinfo}{netloc}{tail}"


def _without(url: str, option: str) -> str:
    """The URL without the query option ``option``, which the run sets itself."""
    head, _, query = url.partition("?")
    kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != option]
    return f"{head}?{urlencode(kept)}" if kept else head


def _shared(url: str, namespace: str) -> str:
    """A ``memory://`` without a name is private to one store: name it, so workers share it."""
    scheme, userinfo, hosts, tail = _split(url)
    if scheme.lower() != "memory" or hosts or tail.partition("?")[0].strip("/"):
        return url
    return f"{scheme}://{userinfo}{namespace}{tail}"
