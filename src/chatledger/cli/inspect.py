"""``chatledger show`` and ``chatledger sessions``: look into a store."""

from __future__ import annotations

import click

from ..results import History, SessionInfo
from .render import format_message, json_line
from .target import Target, target_options


@click.command()
@target_options
@click.argument("session")
@click.option("--last", type=click.IntRange(min=0), default=None,
              help="Only the last N messages.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@click.pass_obj
def show(target: Target, session: str, last: int | None, as_json: bool) -> None:
    """Print one session: its state, then its messages."""
    with target.store(existing=True) as store:
        ledger = store.session(session)
        info = ledger.info()
        if info is None:
            raise click.ClickException(
                f"no session {session!r} in namespace {store.namespace!r} at {store.url}")
        history = ledger.read(last=last)
    if as_json:
        _print_json(history)
        return
    click.echo(_describe(session, info))
    for message in history:
        click.echo(format_message(message))


@click.command()
@target_options
@click.option("--prefix", default="", help="Only ids that start with this text, literally.")
@click.pass_obj
def sessions(target: Target, prefix: str) -> None:
    """List the session ids of the namespace."""
    with target.store(existing=True) as store:
        for session_id in store.sessions(prefix=prefix):
            click.echo(session_id)


def _describe(session: str, info: SessionInfo) -> str:
    expiry = info.expires_at.isoformat(timespec="seconds") if info.expires_at else "never"
    trimmed = f", seqs {info.first_seq}..{info.version}" if info.count else ""
    return (f"session {session}: version {info.version}, {info.count} messages{trimmed}\n"
            f"  created {info.created_at.isoformat(timespec='seconds')}, "
            f"updated {info.updated_at.isoformat(timespec='seconds')}, expires {expiry}")


def _print_json(history: History) -> None:
    for message in history:
        click.echo(json_line(message))


COMMANDS = (show, sessions)
