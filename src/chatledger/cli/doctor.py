"""``chatledger doctor [URL]``: diagnose a deployment; non-zero exit on errors."""

from __future__ import annotations

import click
import orjson

from ..doctor import Check, Report, diagnose
from ..url import redact
from .target import Target, missing_database, target_options

_MARKS = {"ok": "ok", "info": "info", "warn": "WARN", "fail": "FAIL"}


@click.command()
@target_options
@click.argument("url", required=False)
@click.option("--json", "as_json", is_flag=True, help="One JSON document, for machines.")
@click.pass_obj
def doctor(target: Target, url: str | None, as_json: bool) -> None:
    """Check connectivity, durability and safety of the store at URL (default: --url)."""
    url = url or target.url
    if missing := missing_database(url):  # a typo must not create a database
        report = Report(redact(url), [Check("open", "fail", f"no SQLite database at {missing}")])
    else:
        report = diagnose(url, **target.options)
    if as_json:
        click.echo(orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2).decode())
    else:
        click.echo(_human(report))
    if report.failed:
        raise SystemExit(1)


def _human(report: Report) -> str:
    lines = [f"chatledger doctor {report.url}"]
    lines += [f"  {_MARKS[c.status]:<5} {c.name:<12} {c.detail}" for c in report.checks]
    lines.append(f"{report.count('fail')} error(s), {report.count('warn')} warning(s)")
    return "\n".join(lines)


COMMANDS = (doctor,)
