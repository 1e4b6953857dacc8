"""Where the commands work: the store URL and namespace, given before or after the command."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import click

from ..errors import ChatLedgerError
from ..options import StoreOptions
from ..store import Store, open_store
from ..url import parse_url

DEFAULT_URL = "sqlite:///./chatledger.db"

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Target:
    """A store URL and, unless the URL says it, a namespace."""

    url: str
    namespace: str | None

    @property
    def options(self) -> dict[str, str]:
        """The namespace to pass, unless the URL already names it (the same one)."""
        if self.namespace is None:
            return {}
        in_url = _url_namespace(self.url)
        if in_url is None:
            return {"namespace": self.namespace}
        if in_url != self.namespace:
            raise click.UsageError(f"the URL says namespace {in_url!r}, --namespace (or "
                                   f"CHATLEDGER_NAMESPACE) says {self.namespace!r}")
        return {}

    @property
    def namespace_in_use(self) -> str:
        """--namespace, else the URL's, else the store's default; a conflict is a UsageError."""
        return (self.options.get("namespace") or _url_namespace(self.url)
                or StoreOptions.namespace)

    @property
    def cli_args(self) -> list[str]:
        """The same target as arguments for another ``chatledger`` process."""
        return ["--url", self.url, *(["--namespace", self.namespace] if self.namespace else [])]

    @contextmanager
    def store(self, *, existing: bool = False) -> Iterator[Store]:
        """Open the store; ``existing``: a command that only reads creates no file."""
        with reported_errors():
            if existing and (missing := missing_database(self.url)):
                raise click.ClickException(f"no SQLite database at {missing}")
            with open_store(self.url, **self.options) as store:
                yield store


def target_options(command: F) -> F:
    """Let ``--url`` and ``--namespace`` follow the command's name as well as precede it.

    The group alone reads the environment and the default, so an option after
    the command is only ever typed by hand, and it wins over the group's value:
    the later of two placements wins, as the last of a repeated option does.
    """
    command = click.option(
        "--namespace", "namespace_after", expose_value=False, callback=_override("namespace"),
        help="Namespace of the sessions; wins over --namespace before the command and "
             "CHATLEDGER_NAMESPACE.",
    )(command)
    return click.option(
        "--url", "url_after", expose_value=False, callback=_override("url"),
        help=f"Store URL; wins over --url before the command and CHATLEDGER_URL "
             f"(default {DEFAULT_URL}).",
    )(command)


def _override(field: str) -> Callable[[click.Context, click.Parameter, str | None], None]:
    def replace_in_context(ctx: click.Context, _: click.Parameter, value: str | None) -> None:
        # The command's context inherits the group's Target; replacing it here
        # (not changing it) leaves the group's own value as the group read it.
        if value is not None:
            ctx.obj = replace(ctx.obj, **{field: value})
    return replace_in_context


def _url_namespace(url: str) -> str | None:
    try:
        return parse_url(url).query.get("namespace")
    except ChatLedgerError:
        return None  # open_store will say what is wrong with the URL


def missing_database(url: str) -> str | None:
    """The path of a ``sqlite://`` URL's file when it does not exist (a typo, surely)."""
    try:
        parsed = parse_url(url)
    except ChatLedgerError:
        return None  # open_store will say what is wrong with it
    if parsed.scheme != "sqlite" or not parsed.path or Path(parsed.path).exists():
        return None
    return parsed.path


@contextmanager
def reported_errors() -> Iterator[None]:
    """Show errors as one clear line and exit 1, not as a traceback."""
    try:
        yield
    except ChatLedgerError as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from exc
    except ValueError as exc:  # a bad session id or prefix typed on the command line
        raise click.ClickException(str(exc)) from exc
