"""Where output goes: colour on a terminal and none in a pipe, JSON, progress on stderr."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click
import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text


def console(*, stderr: bool = False) -> Console:
    """A console that colours only on a terminal and never rewrites what it prints.

    Made per command, so that it writes to the streams of that run (a test
    runner swaps them). No markup, emoji codes or highlighting: data printed
    through it is shown as it is, and ``soft_wrap`` leaves line breaking to us.
    """
    return _Console(stderr=stderr, markup=False, emoji=False, highlight=False, soft_wrap=True)


class _Console(Console):
    """A reader that closes the pipe early (``| head``) ends the command as ``Commands``
    says (quietly, status 0), where rich exits with status 1, which reads as a failure."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def counted(number: int, noun: str) -> str:
    """``1 session``, ``2 sessions``, ``1,000 messages``: a count and its noun, agreed."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def say(text: str | Text, *, style: str | None = None) -> None:
    """One line (or a few) on stdout."""
    console().print(text, style=style)


def note(text: str) -> None:
    """A line for the person at the terminal, on stderr: never mixed into data."""
    console(stderr=True).print(text, style="yellow")


def print_json(document: Any) -> None:
    """One JSON document on stdout, indented for people who read it."""
    click.echo(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode())


@contextmanager
def progress(label: str, total: int | None) -> Iterator[Progress]:
    """A progress bar on stderr, drawn only when stderr is a terminal."""
    err = console(stderr=True)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), console=err, transient=True,
                   disable=not err.is_terminal)
    with bar:
        bar.add_task(label, total=total)
        yield bar


@contextmanager
def progress_callback(label: str) -> Iterator[Callable[[int, int], None]]:
    """A ``(done, total)`` callback that moves a bar on stderr (on a terminal only): for
    library calls that learn their total as they go."""
    with progress(label, None) as bar:
        task = bar.task_ids[0]
        yield lambda done, total: bar.update(task, completed=done, total=total)


def advance(bar: Progress, steps: int = 1) -> None:
    """Move the (only) bar of ``bar`` on by ``steps``."""
    bar.advance(bar.task_ids[0], steps)


def silence_stdout() -> None:
    """After the reader closed the pipe: send what is still buffered nowhere.

    Without it the interpreter's final flush fails once more and prints an
    error about a pipe the reader closed on purpose (``export | head -1``).
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor: a test runner's stream
        pass
