"""``chatledger doctor [URL]``: diagnose a deployment; exit 1 when a check fails."""

from __future__ import annotations

import dataclasses

import click
from rich.text import Text

from .._checks import ForeignLayout
from .._doctor import Report, diagnose
from .console import console, print_json
from .failures import FAILED, Unusable
from .target import Target, encryption, target_options

_MARKS = {"ok": ("ok", "green"), "info": ("info", "blue"), "warn": ("WARN", "bold yellow"),
          "fail": ("FAIL", "bold red")}


@click.command()
@target_options
@click.argument("url", required=False)
@click.option("--json", "as_json", is_flag=True, help="One JSON document, for machines.")
@click.pass_obj
def doctor(target: Target, url: str | None, as_json: bool) -> None:
    """Check connectivity, durability and safety of the store at URL (default: --url).

    Every backend: a real round trip (append, idempotent retry, read back,
    delete) in a scratch namespace. SQLite: journal mode, quick_check, the
    file and its size. Redis: latency, version, eviction policy, persistence,
    replication, scripts. DynamoDB: the table's status, key schema, TTL,
    billing and backups. With CHATLEDGER_KEYRING: the entries of the
    namespace stored in the clear (reads refuse them). Stored data: the newest
    entries of a sample of each kind of session, and every LangGraph store
    item, must decode. Exit 1 when a check
    fails (a table of another key schema too), 2 when the store cannot be
    reached at all.

    \b
    Example: chatledger doctor redis://localhost:6379/0
    """
    target = dataclasses.replace(target, url=url or target.url)
    try:
        with target.store(existing=True):
            pass  # reachable (or exit 2, saying how long it tried) before the checks
    except Unusable as exc:
        if not isinstance(exc.__cause__, ForeignLayout):
            raise
        # The server answered, and what the URL names is not chatledger's: a finding
        # that the checks name (exit 1), not a store out of reach.
    report = diagnose(target.url, **target.options, **encryption())
    if as_json:
        print_json(report.to_json())
    else:
        _human(report)
    if report.failed:
        raise SystemExit(FAILED)


def _human(report: Report) -> None:
    out = console()
    out.print(f"chatledger doctor {report.url}", style="bold")
    for check in report.checks:
        mark, style = _MARKS[check.status]
        out.print(Text.assemble("  ", (f"{mark:<5}", style), f" {check.name:<12} {check.detail}"))
    out.print(f"{report.count('fail')} error(s), {report.count('warn')} warning(s)")


COMMANDS = (doctor,)
