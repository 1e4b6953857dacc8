"""``chatledger show`` and ``chatledger sessions``: look into a store."""

from __future__ import annotations

import click
import orjson

from ..messages import Message
from ..results import History, SessionInfo
from .main import Target


@click.command()
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
@click.option("--prefix", default="", help="Only ids that start with this text, literally.")
@click.pass_obj
def sessions(target: Target, prefix: str) -> None:
    """List the session ids of the namespace."""
    with target.store(existing=True) as store:
        for session_id in store.sessions(prefix=prefix):
            click.echo(session_id)


def format_message(message: Message) -> str:
    """One message as a line or a few: seq, role, text, tool calls."""
    head = f"{message.seq:>5}  {message.role:<9} "
    lines = [head + (message.text or "")]
    lines += [f"{'':>16}-> {call['name']}({orjson.dumps(call['args']).decode()})"
              f" [{call['id']}]" for call in message.tool_calls]
    if message.tool_call_id:
        lines[0] += f"  [result of {message.tool_call_id}]"
    return "\n".join(lines)


def _describe(session: str, info: SessionInfo) -> str:
    expiry = info.expires_at.isoformat(timespec="seconds") if info.expires_at else "never"
    trimmed = f", seqs {info.first_seq}..{info.version}" if info.count else ""
    return (f"session {session}: version {info.version}, {info.count} messages{trimmed}\n"
            f"  created {info.created_at.isoformat(timespec='seconds')}, "
            f"updated {info.updated_at.isoformat(timespec='seconds')}, expires {expiry}")


def _print_json(history: History) -> None:
    for message in history:
        click.echo(json_line(message))


def json_line(message: Message, **extra: str) -> str:
    """One message as a line of JSON, every field named in full."""
    record = {**extra, "seq": message.seq, "role": message.role, "content": message.content,
              "id": message.id, "name": message.name, "tool_calls": message.tool_calls,
              "tool_call_id": message.tool_call_id, "metadata": message.metadata,
              "created_at": message.created_at.isoformat()}
    return orjson.dumps(record).decode()


COMMANDS = (show, sessions)
