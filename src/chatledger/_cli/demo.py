"""``chatledger demo``: a support conversation carried across two processes.

The first process starts the conversation and exits; the second one starts with
nothing in memory, reads the ledger and carries on: the agent still knows the
customer's name and order. Each turn reads the last 20 messages with
``min_version`` (the version the caller last saw, so lost memory is an error,
not a blank) and appends the customer's message and the reply as one batch
with ``expect_version`` (so a concurrent writer is a conflict, not a tangle).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from datetime import datetime, timezone

import click

from .._messages import assistant, user
from .._sync.store import Session
from .._url import redact
from .console import console, counted
from .failures import Failure
from .render import Layout, message_text
from .support_agent import reply
from .target import Target, target_options

SCRIPT = {
    1: ["Hi, I'm Dana and my order number is 48213.", "When will it ship?"],
    2: ["It arrived damaged, so I'd like a refund please."],
}
WINDOW = 20


@click.command()
@target_options
@click.option("--session", "session_id", default=None,
              help="Session id to use (default: a new demo-... id).")
@click.pass_obj
def demo(target: Target, session_id: str | None) -> None:
    """Run a support conversation whose second half runs in another process.

    \b
    Example: chatledger demo --url sqlite:///demo.db --session my-first
    """
    if target.url.partition("://")[0] == "memory":  # the second process would find nothing
        raise click.UsageError("the demo runs in two processes and memory:// lives in one: "
                               "give a store both reach, e.g. --url sqlite:///demo.db")
    session_id = session_id or _new_session_id()
    with target.store() as store:  # the script starts a conversation: never replay it
        if (info := store.session(session_id).info()) is not None:
            raise Failure(f"session {session_id!r} already exists (version {info.version}); "
                          f"give a new --session, or see it: chatledger show {session_id}")
    # namespace_in_use also stops a --namespace that contradicts the URL here,
    # as a usage error, rather than as a failure of the first child process.
    click.echo(f"chatledger demo: {redact(target.url)} "
               f"(namespace {target.namespace_in_use!r}), session {session_id}")
    version = 0
    for part, intro in ((1, "starts the conversation"),
                        (2, "starts empty, reads the ledger, carries on")):
        click.echo(f"\n--- process {part} {intro} ---")
        version = _run_part(target, session_id, part, version)
    click.echo(f"\nThe session is at version {version}. "
               f"See it again with: chatledger show {session_id}")


@click.command(name="demo-part", hidden=True)
@target_options
@click.option("--session", "session_id", required=True)
@click.option("--part", type=click.IntRange(1, 2), required=True)
@click.option("--min-version", type=click.IntRange(min=0), default=0)
@click.pass_obj
def demo_part(target: Target, session_id: str, part: int, min_version: int) -> None:
    """One process's share of the demo; prints the version it leaves behind."""
    with target.store() as store:
        session = store.session(session_id)
        click.echo(f"  [pid {os.getpid()}] ", nl=False)
        history = session.read(last=WINDOW, min_version=min_version)
        click.echo(f"loaded {counted(len(history), 'message')} (version {history.version})")
        for said in SCRIPT[part]:
            version = _turn(session, said, min_version)
            min_version = version
        click.echo(f"VERSION {min_version}")


def _turn(session: Session, said: str, known_version: int) -> int:
    history = session.read(last=WINDOW, min_version=known_version)
    answer = reply(history.messages, said)
    ack = session.append([user(said), assistant(answer)], expect_version=history.version)
    out = console()
    for message in session.read(after=ack.first_seq - 1):
        out.print(message_text(message, Layout(seq_width=2)))
    return ack.version


def _run_part(target: Target, session_id: str, part: int, min_version: int) -> int:
    command = [sys.executable, "-m", "chatledger", *target.cli_args,
               "demo-part", "--session", session_id, "--part", str(part),
               "--min-version", str(min_version)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    lines = result.stdout.splitlines()
    for line in lines:
        if not line.startswith("VERSION "):
            click.echo(line)
    if result.returncode != 0 or not lines or not lines[-1].startswith("VERSION "):
        raise click.ClickException(f"process {part} failed:\n{result.stderr.strip()}")
    return int(lines[-1].split()[1])


def _new_session_id() -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"demo-{stamp}-{secrets.token_hex(2)}"


COMMANDS = (demo, demo_part)
