"""The command group and the options every command shares."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import click

from ..errors import ChatLedgerError
from ..store import Store, open_store

DEFAULT_URL = "sqlite:///./chatledger.db"


class Target:
    """Where the commands work: a store URL and a namespace."""

    def __init__(self, url: str, namespace: str) -> None:
        self.url = url
        self.namespace = namespace

    @contextmanager
    def store(self) -> Iterator[Store]:
        with reported_errors(), open_store(self.url, namespace=self.namespace) as store:
            yield store


@contextmanager
def reported_errors() -> Iterator[None]:
    """Show chatledger's errors as one clear line and exit 1, not as a traceback."""
    try:
        yield
    except ChatLedgerError as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", envvar="CHATLEDGER_URL", default=DEFAULT_URL, show_default=True,
              help="Store URL (env CHATLEDGER_URL).")
@click.option("--namespace", envvar="CHATLEDGER_NAMESPACE", default="default",
              show_default=True, help="Namespace of the sessions (env CHATLEDGER_NAMESPACE).")
@click.version_option(package_name="chatledger")
@click.pass_context
def main(ctx: click.Context, url: str, namespace: str) -> None:
    """chatledger: conversation memory for LLM agents that does not forget."""
    ctx.obj = Target(url, namespace)


def _register() -> None:
    # The command modules import this one for Target; they are loaded last.
    from . import demo, doctor, inspect  # noqa: PLC0415

    for command in (*demo.COMMANDS, *inspect.COMMANDS, *doctor.COMMANDS):
        main.add_command(command)


_register()
