"""``chatledger migrate --from-langchain``: import what RedisChatMessageHistory wrote."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

import click

from .._url import redact
from .failures import FAILED, Unusable, hide_password, reported_errors
from .target import Target, target_options

_EXTRAS = "pip install 'chatledger[langchain,redis]'"


@click.command()
@target_options
@click.option("--from-langchain", "source", required=True, metavar="REDIS_URL",
              help="The Redis that langchain_community's RedisChatMessageHistory wrote to.")
@click.option("--key-prefix", default="message_store:", show_default=True,
              help="The key_prefix the application gave RedisChatMessageHistory.")
@click.option("--to", "destination", default=None, metavar="URL",
              help="The chatledger store to import into (default: --url).")
@click.option("--dry-run", is_flag=True, help="Decode and count everything, store nothing.")
@click.pass_obj
def migrate(target: Target, source: str, key_prefix: str, destination: str | None,
            dry_run: bool) -> None:
    """Import every RedisChatMessageHistory list into chatledger sessions, oldest first.

    Idempotent: running it again imports nothing new. Entries that cannot be
    decoded are listed with their keys, and the rest is imported; the exit
    status is then 1. A source Redis that cannot be read exits 2.

    Example: chatledger migrate --from-langchain redis://localhost:6379/0 --to sqlite:///bot.db
    """
    try:
        from ..langchain._migrate import migrate_from_langchain  # noqa: PLC0415 -- optional extras
    except ImportError as exc:
        raise Unusable(f"migrate needs {exc.name}: {_EXTRAS}") from exc
    if destination is not None:
        target = dataclasses.replace(target, url=destination)
    click.echo(f"{'dry run: ' if dry_run else ''}{redact(source)} ({key_prefix}*) -> "
               f"{redact(target.url)}", err=True)
    import redis  # noqa: PLC0415 -- present once the import above succeeded

    with target.store() as store, reported_errors(target.url), _ProgressBar() as progress:
        try:
            report = migrate_from_langchain(source, key_prefix, store, dry_run=dry_run,
                                            progress=progress)
        except redis.RedisError as exc:
            raise Unusable(hide_password(f"cannot read {redact(source)}: {type(exc).__name__}: "
                                         f"{exc}", source)) from exc
    click.echo(report.summary())
    if report.undecodable:
        raise SystemExit(FAILED)


class _ProgressBar:
    """A progress bar on stderr, made once the number of lists is known."""

    def __init__(self) -> None:
        # click's ProgressBar class is private, so it is held as Any.
        self._bar: Any = None
        self._done = 0

    def __enter__(self) -> Callable[[int, int], None]:
        return self.update

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.render_finish()

    def update(self, done: int, total: int) -> None:
        if self._bar is None:
            self._bar = click.progressbar(length=total, label="lists", file=sys.stderr)
        self._bar.update(done - self._done)
        self._done = done


COMMANDS = (migrate,)
