"""``chatledger export`` and ``chatledger import``: sessions to JSON Lines and back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

import click
from rich.text import Text

from ..messages import Message
from ..store import Session, Store
from .console import advance, console, note, print_json, progress
from .failures import Failure, Unusable
from .importing import Lines, Outcome, check, group, import_session
from .records import BadLine, emptied_line, json_line, parse_line
from .render import escape
from .target import Target, target_options

PAGE = 1000  # messages read per round trip: memory stays bounded on long sessions
# Data read per round trip, roughly: pages of messages that carry megabytes of
# data shrink so that a page stays near this size.
PAGE_DATA_BYTES = 64 * 1024 * 1024


@click.command()
@target_options
@click.argument("session_ids", nargs=-1)
@click.option("--prefix", default=None, help="Every session whose id starts with this text.")
@click.option("--out", type=click.File("w", encoding="utf-8", lazy=True), default="-",
              help="File to write (default: standard output).")
@click.pass_obj
def export(target: Target, session_ids: tuple[str, ...], prefix: str | None,
           out: IO[str]) -> None:
    """Write sessions as JSON Lines: one message a line, with its session id and seq.

    Give SESSION_IDS, or --prefix, or neither for every session of the
    namespace. A session named that does not exist is an error, and then
    nothing is written. `chatledger import` reads the file back.

    \b
    Example: chatledger export --prefix user- --out users.jsonl --url sqlite:///bot.db
    """
    if session_ids and prefix is not None:
        raise click.UsageError("give session ids or --prefix, not both")
    with target.store(existing=True) as store:
        chosen = _named(store, session_ids) if session_ids else sorted(
            set(store.sessions(prefix=prefix or "")))
        written = 0
        with progress("exporting sessions", len(chosen)) as bar:
            for session_id in chosen:
                for line in _lines(store.session(session_id)):
                    out.write(line + "\n")
                    written += 1
                advance(bar)
        out.flush()
    note(f"exported {written:,} messages from {len(chosen):,} sessions of namespace "
         f"{store.namespace!r}")


def _named(store: Store, session_ids: tuple[str, ...]) -> list[str]:
    missing = [sid for sid in dict.fromkeys(session_ids) if store.session(sid).info() is None]
    if missing:
        raise Failure(f"no session {', '.join(map(repr, missing))} in namespace "
                      f"{store.namespace!r} at {store.url}; nothing exported")
    return list(dict.fromkeys(session_ids))


def _lines(session: Session) -> Iterator[str]:
    after, limit = 0, PAGE
    while True:
        page = session.read(after=after, limit=limit)
        if not page.messages and after == 0 and page.version:
            yield emptied_line(session.id, page.version)  # trimmed to nothing: keep its version
            return
        for message in page:
            yield json_line(message, session.id)
        if len(page) < limit:
            return
        after = page.messages[-1].seq or after
        limit = _next_limit(page.messages)


def _next_limit(messages: list[Message]) -> int:
    """As many messages as PAGE_DATA_BYTES holds at the last page's data per message."""
    data = sum(len(m.data) for m in messages if m.data is not None)
    return max(1, min(PAGE, PAGE_DATA_BYTES * len(messages) // max(1, data)))


@click.command(name="import")
@target_options
@click.argument("source", type=click.File("r", encoding="utf-8"), default="-")
@click.option("--dry-run", is_flag=True, help="Check the file and say what would be added.")
@click.option("--json", "as_json", is_flag=True, help="The outcome as one JSON document.")
@click.pass_obj
def import_(target: Target, source: IO[str], dry_run: bool, as_json: bool) -> None:
    """Import what `chatledger export` wrote, keeping ids, seqs and timestamps.

    Importing twice adds nothing; an interrupted import resumes. A session the
    target does not have is recreated exactly (a trimmed one too: same seqs,
    version and first seq). Into a session the target has, only messages
    after its version are appended, and only when the messages it holds at
    the file's seqs are the file's (same ids): otherwise that session is
    refused, nothing is written to it, and the exit status is 1. The whole
    file is read and checked first: a bad line is an error naming the line,
    and then nothing is written at all.

    \b
    Example: chatledger export --url sqlite:///old.db | chatledger import --url redis://localhost:6379/0
    """
    with target.store() as store:
        sessions = _read(source, store.options.max_message_bytes)
        outcomes: list[Outcome] = []
        with progress("importing sessions", len(sessions)) as bar:
            for session_id, lines in sessions.items():
                outcomes.append(import_session(store, session_id, lines, dry_run=dry_run))
                advance(bar)
    _report(outcomes, dry_run, as_json)
    if any(outcome.refused for outcome in outcomes):
        raise SystemExit(1)


def _read(source: IO[str], max_message_bytes: int) -> dict[str, Lines]:
    try:
        sessions = group(parse_line(text, number) for number, text in enumerate(source, 1)
                         if text.strip())
        check({sid: lines for sid, lines in sessions.items() if isinstance(lines, list)},
              max_message_bytes)
    except BadLine as exc:
        raise Unusable(f"{getattr(source, 'name', 'input')}: {exc}; nothing imported") from None
    return sessions


def _report(outcomes: list[Outcome], dry_run: bool, as_json: bool) -> None:
    verb = "would add" if dry_run else "added"
    if as_json:
        print_json({"dry_run": dry_run, "sessions": [vars(o) for o in outcomes],
                    "added": sum(o.added for o in outcomes),
                    "refused": sum(1 for o in outcomes if o.refused)})
        return
    out = console()
    for o in outcomes:
        line = f"{escape(o.session)}: {verb} {o.added}, already there {o.present}"
        out.print(Text(line + (f"; REFUSED: {o.refused}" if o.refused else ""),
                       style="red" if o.refused else ""))
    note(f"{verb} {sum(o.added for o in outcomes):,} messages to {len(outcomes)} sessions"
         f"; {sum(1 for o in outcomes if o.refused)} refused")


COMMANDS = (export, import_)
