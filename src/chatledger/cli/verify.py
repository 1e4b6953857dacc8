"""``chatledger verify [URL]``: a bounded chaos run against a deployment, then the history check.

Worker processes append user+assistant turns and read windows of a few shared
sessions, in a scratch namespace, while the parent injects faults through a
FaultProxy in front of the server. Every operation is recorded; after the run a
clean (unproxied) store reads every session, and ``check_history`` says whether
an acknowledged append was lost, duplicated, torn or reordered, or a read went
backwards. Only the URL given and loopback are ever contacted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import secrets
import time
from contextlib import ExitStack
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode

import click

from ..errors import BackendError, ChatLedgerError
from ..messages import assistant, user
from ..options import RetryPolicy
from ..results import History
from ..store import Session, Store, open_store
from ..testing import (
    ConcurrentRun,
    FaultProxy,
    HistoryReport,
    Recorder,
    RedisServer,
    check_history,
    run_concurrently,
)
from ..url import parse_url
from .console import console, note, print_json
from .failures import FAILED, Unusable, explain
from .fault_schedule import Fault, FaultPlayer, plan
from .target import Target, target_options

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


@dataclass(frozen=True)
class Workload:
    """What each worker does, sent to its process (so: plain, picklable values)."""

    url: str
    namespace: str
    duration: float
    seed: int


class Conversations:
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


def turns(worker: int, recorder: Recorder, workload: Workload) -> None:
    """Append turns and read windows until the duration is up; a fault ends one operation."""
    rng = random.Random(f"{workload.seed}/{worker}")
    with open_store(workload.url, namespace=workload.namespace, timeout=WORKER_TIMEOUT,
                    retry=RetryPolicy(deadline=WORKER_DEADLINE)) as store:
        conversations = Conversations(store)
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


@dataclass(frozen=True)
class Outcome:
    """A finished run: what was injected, what the workers recorded, what the check found."""

    url: str
    namespace: str
    seed: int
    processes: int
    duration: float
    why_not_proxied: str | None
    faults: tuple[Fault, ...]
    faults_hit: int
    run: ConcurrentRun
    report: HistoryReport
    kept: bool

    @property
    def ok(self) -> bool:
        return self.report.ok and not self.run.errors


@click.command()
@target_options
@click.argument("url", required=False)
@click.option("--local", is_flag=True,
              help="Verify a private redis-server spawned on a free loopback port.")
@click.option("--processes", type=click.IntRange(1, 64), default=4, show_default=True,
              help="Worker processes appending and reading at once.")
@click.option("--duration", type=click.FloatRange(0, MAX_DURATION, min_open=True), default=10.0,
              show_default=True, metavar="SECONDS", help=f"How long the workers run "
                                                        f"(at most {MAX_DURATION:g}).")
@click.option("--seed", type=int, default=None,
              help="Seed of the fault plan and the workload (default: random, printed).")
@click.option("--no-faults", is_flag=True, help="Inject nothing: measure a healthy run.")
@click.option("--keep", is_flag=True, help="Keep the scratch namespace's sessions.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document, for machines.")
@click.pass_obj
def verify(target: Target, url: str | None, *, local: bool, processes: int, duration: float,
           seed: int | None, no_faults: bool, keep: bool, as_json: bool) -> None:
    """Prove a deployment keeps its promises under faults: a bounded chaos run.

    Worker processes append user+assistant turns to a few shared sessions and
    read them back for --duration seconds, in a scratch namespace
    (<namespace>-verify-<random>, purged at the end unless --keep). On a
    redis:// URL a fault proxy in front of the server injects outages, hangs,
    latency, resets, lost and cut replies and dripping replies at random
    (--seed repeats them). Then every session is read through a clean
    connection and the history checker looks for acknowledged appends lost,
    duplicated or torn, and reads going backwards. Exit 0 when none, 1 on any
    anomaly, 2 when the run cannot start.

    \b
    Example: chatledger verify --local --duration 30
    """
    if local and url:
        raise click.UsageError("give a URL or --local, not both")
    seed = secrets.randbelow(2**31) if seed is None else seed
    with ExitStack() as stack:
        if local:
            url = _spawn_server(stack)
        target = dataclasses.replace(target, url=url or target.url)
        outcome = _run(stack, target, processes=processes, duration=duration, seed=seed,
                       faults=not no_faults, keep=keep)
    if as_json:
        _show_json(outcome)
    else:
        _show(outcome)
    if not outcome.ok:
        raise SystemExit(FAILED)


def _spawn_server(stack: ExitStack) -> str:
    try:
        server = RedisServer().start()
    except (RuntimeError, OSError) as exc:
        raise Unusable(f"--local could not start redis-server: {exc}") from exc
    stack.callback(server.stop)
    return server.url


def _run(stack: ExitStack, target: Target, *, processes: int, duration: float, seed: int,
         faults: bool, keep: bool) -> Outcome:
    namespace = f"{target.namespace_in_use}-verify-{secrets.token_hex(3)}"
    url = _shared(_without(target.url, "namespace"), namespace)
    store = stack.enter_context(Target(url, namespace, target.deadline).store(existing=True))
    if not keep:
        stack.callback(_purge, store)
    why_not = _why_not_proxied(url) if faults else "--no-faults"
    if why_not is not None and faults:
        note(f"chatledger verify: no faults can be injected into {store.url}: {why_not}; "
             f"running the workload without the proxy")
    workload = Workload(_without(url, "timeout"), namespace, duration, seed)
    injected, hit, run = _chaos(stack, workload, processes) if why_not is None else (
        (), 0, _work(workload, processes))
    report = check_history(run.records, _final_reads(store, run))
    return Outcome(store.url, namespace, seed, processes, duration, why_not, injected, hit,
                   run, report, keep)


def _chaos(stack: ExitStack, workload: Workload,
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


def _work(workload: Workload, processes: int) -> ConcurrentRun:
    # memory:// is private to a process: its workers can only be threads of this one.
    in_processes = parse_url(workload.url).scheme != "memory"
    return run_concurrently(turns, processes, processes=in_processes, args=(workload,),
                            timeout=STARTUP_ALLOWANCE + workload.duration + FINISH_ALLOWANCE)


def _final_reads(store: Store, run: ConcurrentRun) -> dict[str, History]:
    """Every session as it is after the run, read through a clean connection: those
    the workers wrote to, and any other the namespace holds (it should hold none)."""
    names = {record.session for record in run.records} | set(store.sessions())
    return {name: store.session(name).read() for name in sorted(names)}


def _purge(store: Store) -> None:
    try:
        store.purge()
    except ChatLedgerError as exc:  # the report matters more than the scratch sessions
        note(f"chatledger verify: could not purge namespace {store.namespace!r}: "
             f"{explain(exc, store.url)}")


# -- URLs ---------------------------------------------------------------------------------


def _why_not_proxied(url: str) -> str | None:
    parsed = parse_url(url)
    if parsed.scheme in _PROXIED and len(parsed.hosts) == 1:
        return None
    return _NOT_PROXIED.get(parsed.scheme, f"{parsed.scheme}:// is not a single Redis or "
                                           "PostgreSQL host")


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


# -- output -------------------------------------------------------------------------------


def _show(outcome: Outcome) -> None:
    out = console()
    out.print(f"chatledger verify {outcome.url}: {outcome.processes} processes for "
              f"{outcome.duration:g} s, namespace {outcome.namespace!r}, seed {outcome.seed}",
              style="bold")
    if outcome.why_not_proxied is None:
        out.print(f"faults: {len(outcome.faults)} injected, which hit the traffic "
                  f"{outcome.faults_hit} times (connections refused or reset, replies lost "
                  f"or cut)")
        for fault in outcome.faults:
            out.print(f"  {fault.describe()}")
    else:
        out.print(f"faults: none ({outcome.why_not_proxied})")
    out.print(str(outcome.report))
    for error in outcome.run.errors:
        out.print(f"worker {error.worker} stopped: {error.error}", style="bold red")
    if outcome.kept:
        out.print(f"kept: the sessions verify-<slot>-<n> of namespace {outcome.namespace!r}")
    verdict, style = _verdict(outcome)
    out.print(verdict, style=style)


def _verdict(outcome: Outcome) -> tuple[str, str]:
    """The last line, and its colour."""
    if outcome.ok:
        return "ok: every acknowledged append was kept, once, whole and in order", "bold green"
    if outcome.report.ok:
        return (f"FAILED: {len(outcome.run.errors)} worker(s) stopped before the end: "
                f"the run proves nothing"), "bold red"
    return "FAILED: this deployment broke a promise (see above)", "bold red"


def _show_json(outcome: Outcome) -> None:
    report = outcome.report
    print_json({
        "ok": outcome.ok, "url": outcome.url, "namespace": outcome.namespace,
        "seed": outcome.seed, "processes": outcome.processes, "duration": outcome.duration,
        "kept": outcome.kept,
        "faults": {"proxied": outcome.why_not_proxied is None,
                   "why_not": outcome.why_not_proxied, "hit": outcome.faults_hit,
                   "injected": [dataclasses.asdict(fault) for fault in outcome.faults]},
        "figures": dataclasses.asdict(report.figures),
        "counts": report.counts,
        "anomalies": [{"kind": a.kind, "session": a.session, "seqs": list(a.seqs),
                       "detail": a.detail,
                       "operations": [op.describe(report.origin) for op in a.operations]}
                      for a in report.anomalies],
        "worker_errors": [str(error) for error in outcome.run.errors],
    })


COMMANDS = (verify,)
