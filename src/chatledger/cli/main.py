"""The command group and the options every command shares."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from ..errors import ChatLedgerError
from ..store import Store, open_store
from ..url import parse_url

DEFAULT_URL = "sqlite:///./chatledger.db"


class Target:
    """Where the commands work: a store URL and, unless the URL says it, a namespace."""

    def __init__(self, url: str, namespace: str | None) -> None:
        self.url = url
        self.namespace = namespace

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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", envvar="CHATLEDGER_URL", default=DEFAULT_URL, show_default=True,
              help="Store URL (env CHATLEDGER_URL).")
@click.option("--namespace", envvar="CHATLEDGER_NAMESPACE", default=None,
              help="Namespace of the sessions (env CHATLEDGER_NAMESPACE; default: the URL's "
                   "?namespace=, else 'default').")
@click.version_option(package_name="chatledger")
@click.pass_context
def main(ctx: click.Context, url: str, namespace: str | None) -> None:
    """chatledger: conversation memory for LLM agents that does not forget."""
    ctx.obj = Target(url, namespace)


def _register() -> None:
    # The command modules import this one for Target; they are loaded last.
    from . import demo, doctor, inspect, operate  # noqa: PLC0415

    for command in (*demo.COMMANDS, *inspect.COMMANDS, *operate.COMMANDS, *doctor.COMMANDS):
        main.add_command(command)


_register()
