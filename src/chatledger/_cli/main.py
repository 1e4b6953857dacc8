"""The ``chatledger`` command group: reads the shared options, gathers the commands."""

from __future__ import annotations

from typing import Any

import click

from . import (
    bench,
    completion,
    demo,
    doctor,
    inspect,
    migrate,
    operate,
    rotate,
    schema,
    serve,
    transfer,
    verify,
)
from .console import silence_stdout
from .target import DEADLINE, DEFAULT_URL, Target

EPILOG = """\b
Exit codes: 0 done; 1 something is wrong (a check failed, an anomaly, a session
that does not exist, an import refused, a confirmation declined); 2 the command
could not run (bad usage, a bad URL or option, a server it could not reach);
3 show or export --skip-damaged printed what it could read of a session holding
entries that cannot be decoded, and named them.

\b
An encrypted store: CHATLEDGER_KEYRING='ID=BASE64KEY,OLDID=BASE64KEY' (the first
key encrypts, every key decrypts; never given as an option).

\b
Example: chatledger sessions --url redis://localhost:6379/0 --namespace support-bot
"""


class Commands(click.Group):
    """The group; a reader that closes the pipe early (``| head``) ends the run quietly."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            silence_stdout()
            ctx.exit(0)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=EPILOG)
@click.option("--url", envvar="CHATLEDGER_URL", default=DEFAULT_URL, show_default=True,
              help="Store URL (env CHATLEDGER_URL); also accepted after the command.")
@click.option("--namespace", envvar="CHATLEDGER_NAMESPACE", default=None,
              help="Namespace of the sessions (env CHATLEDGER_NAMESPACE; default: the URL's "
                   "?namespace=, else 'default'); also accepted after the command.")
@click.option("--deadline", type=DEADLINE, default=None,
              metavar="SECONDS", help="Give up on an unreachable store after this long "
                                      "(default 10; a refused connection is retried only when "
                                      "given); also accepted after the command.")
@click.version_option(package_name="chatledger")
@click.pass_context
def main(ctx: click.Context, url: str, namespace: str | None, deadline: float | None) -> None:
    """chatledger: conversation memory for LLM agents that does not forget."""
    ctx.obj = Target(url, namespace, deadline)


for _command in (*demo.COMMANDS, *inspect.COMMANDS, *transfer.COMMANDS, *operate.COMMANDS,
                 *rotate.COMMANDS,
                 *doctor.COMMANDS, *verify.COMMANDS, *bench.COMMANDS, *migrate.COMMANDS,
                 *schema.COMMANDS, *serve.COMMANDS, *completion.COMMANDS):
    main.add_command(_command)
