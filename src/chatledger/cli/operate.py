"""``chatledger export`` and ``chatledger purge``: take sessions out, or away."""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

import click

from ..store import Session, Store
from .render import json_line
from .target import Target, target_options

PAGE = 1000  # messages read per round trip: memory stays bounded on long sessions


@click.command()
@target_options
@click.argument("session_ids", nargs=-1)
@click.option("--prefix", default=None, help="Every session whose id starts with this text.")
@click.option("--out", type=click.File("w", encoding="utf-8"), default="-",
              help="File to write (default: standard output).")
@click.pass_obj
def export(target: Target, session_ids: tuple[str, ...], prefix: str | None,
           out: IO[str]) -> None:
    """Write sessions as JSON Lines: one message per line, with its session id.

    Give SESSION_IDS, or --prefix, or neither for every session of the namespace.
    """
    if session_ids and prefix is not None:
        raise click.UsageError("give session ids or --prefix, not both")
    with target.store(existing=True) as store:
        for session_id in session_ids or store.sessions(prefix=prefix or ""):
            for line in _lines(store.session(session_id)):
                out.write(line + "\n")


def _lines(session: Session) -> Iterator[str]:
    after = 0
    while True:
        page = session.read(after=after, limit=PAGE)
        for message in page:
            yield json_line(message, session=session.id)
        if len(page) < PAGE:
            return
        after = page.messages[-1].seq or after


@click.command()
@target_options
@click.option("--prefix", default=None, help="Delete sessions whose id starts with this text.")
@click.option("--all", "everything", is_flag=True, help="Delete every session of the namespace.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def purge(target: Target, prefix: str | None, everything: bool, yes: bool) -> None:
    """Delete sessions by literal id prefix (or --all) and print how many went."""
    if everything == bool(prefix):  # both, or neither: say which one is meant
        raise click.UsageError("give a non-empty --prefix, or --all")
    prefix = prefix or ""
    with target.store(existing=True) as store:
        if not yes and not _confirmed(store, prefix):
            raise click.ClickException("nothing deleted")
        click.echo(f"deleted {store.purge(prefix=prefix)} session(s)")


def _confirmed(store: Store, prefix: str) -> bool:
    count = sum(1 for _ in store.sessions(prefix=prefix))
    what = f"whose id starts with {prefix!r}" if prefix else "(all of them)"
    return click.confirm(
        f"delete {count} session(s) {what} from namespace {store.namespace!r} at {store.url}?")


COMMANDS = (export, purge)
