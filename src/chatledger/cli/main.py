"""The ``chatledger`` command group: reads the shared options, gathers the commands."""

from __future__ import annotations

import click

from . import demo, doctor, inspect, migrate, operate
from .target import DEFAULT_URL, Target


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", envvar="CHATLEDGER_URL", default=DEFAULT_URL, show_default=True,
              help="Store URL (env CHATLEDGER_URL); also accepted after the command.")
@click.option("--namespace", envvar="CHATLEDGER_NAMESPACE", default=None,
              help="Namespace of the sessions (env CHATLEDGER_NAMESPACE; default: the URL's "
                   "?namespace=, else 'default'); also accepted after the command.")
@click.version_option(package_name="chatledger")
@click.pass_context
def main(ctx: click.Context, url: str, namespace: str | None) -> None:
    """chatledger: conversation memory for LLM agents that does not forget."""
    ctx.obj = Target(url, namespace)


for _command in (*demo.COMMANDS, *inspect.COMMANDS, *operate.COMMANDS, *doctor.COMMANDS,
                 *migrate.COMMANDS):
    main.add_command(_command)
