"""``chatledger verify [URL]``: a bounded chaos run against a deployment, then the history check.

The run is :func:`chatledger.testing.verify_deployment`; this module is its
command line: options, ``--local``, reaching the store first, and the report.
"""

from __future__ import annotations

import dataclasses
from contextlib import ExitStack

import click

from ..testing import RedisServer, Verification, verify_deployment
from ..testing._verify import MAX_DURATION
from ..testing._verify import why_not_proxied as _why_not_proxied
from .console import console, note, print_json
from .failures import FAILED, Unusable, reported_errors
from .target import Seconds, Target, target_options


@click.command()
@target_options
@click.argument("url", required=False)
@click.option("--local", is_flag=True,
              help="Verify a private redis-server spawned on a free loopback port.")
@click.option("--processes", type=click.IntRange(1, 64), default=4, show_default=True,
              help="Worker processes appending and reading at once.")
@click.option("--duration", type=Seconds(MAX_DURATION), default=10.0,
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
    with ExitStack() as stack:
        if local:
            url = _spawn_server(stack)
        target = dataclasses.replace(target, url=url or target.url)
        outcome = _run(target, processes=processes, duration=duration, seed=seed,
                       faults=not no_faults, keep=keep)
    if outcome.purge_error is not None:
        note(f"chatledger verify: {outcome.purge_error}")
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


def _run(target: Target, *, processes: int, duration: float, seed: int | None,
         faults: bool, keep: bool) -> Verification:
    with target.store(existing=True):
        pass  # reached, or the command's error (a refused port fails fast) before any run
    why_not = _why_not_proxied(target.url)
    if why_not is not None and faults:
        note(f"chatledger verify: no faults can be injected into {target.url}: {why_not}; "
             f"running the workload without the proxy")
    retry = target.options.get("retry")
    with reported_errors(target.url):
        outcome = verify_deployment(target.url, namespace=target.namespace_in_use,
                                    processes=processes, duration=duration, seed=seed,
                                    faults=faults, keep=keep, retry=retry)
    return outcome if faults else dataclasses.replace(outcome, why_not_proxied="--no-faults")


# -- output -------------------------------------------------------------------------------


def _show(outcome: Verification) -> None:
    out = console()
    headline, *lines, verdict = outcome.describe()
    stopped = len(lines) - len(outcome.run.errors)  # describe() lists the stopped workers last
    out.print(headline, style="bold")
    for number, line in enumerate(lines):
        out.print(line, style="bold red" if number >= stopped else None)
    out.print(verdict, style="bold green" if outcome.ok else "bold red")


def _show_json(outcome: Verification) -> None:
    report = outcome.report
    print_json({
        "ok": outcome.ok, "verdict": outcome.verdict, "url": outcome.url,
        "namespace": outcome.namespace,
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
