"""``chatledger completion SHELL``: the script that teaches a shell chatledger's words."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

SHELLS = ("bash", "zsh", "fish")


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the completion script for SHELL; load it from your shell's startup file.

    \b
    Example (bash): eval "$(chatledger completion bash)"   # in ~/.bashrc
    Example (zsh):  eval "$(chatledger completion zsh)"    # in ~/.zshrc
    Example (fish): chatledger completion fish > ~/.config/fish/completions/chatledger.fish
    """
    kind = get_completion_class(shell)
    assert kind is not None  # click has a class for every name of SHELLS
    click.echo(kind(ctx.find_root().command, {}, "chatledger", "_CHATLEDGER_COMPLETE").source())


COMMANDS = (completion,)
