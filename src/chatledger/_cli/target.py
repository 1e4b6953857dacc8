"""Where the commands work: the store URL and namespace, given before or after the command."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import click

from .._backends.contract import NoStoreHere
from .._crypto import Keyring
from .._errors import BackendUnavailable, ChatLedgerError, ConfigError
from .._options import MAX_TIMEOUT, RetryPolicy, StoreOptions, split_options
from .._sync.store import Store, open_store_once, raw_access
from .._url import StoreURL, parse_url
from .console import note
from .failures import Unusable, explain, refused_by, reported_errors

DEFAULT_URL = "sqlite:///./chatledger.db"

F = TypeVar("F", bound=Callable[..., Any])


class Seconds(click.FloatRange):
    """Seconds in (0, ``most``]: FloatRange alone lets NaN through (no comparison holds
    for it), and a deadline of NaN never ends."""

    def __init__(self, most: float) -> None:
        super().__init__(0, most, min_open=True)

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        seconds = super().convert(value, param, ctx)
        if math.isnan(seconds):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        return seconds


DEADLINE = Seconds(MAX_TIMEOUT)
"""``--deadline``: at most what the URL's ``retry_deadline`` takes."""


@dataclass(frozen=True)
class Target:
    """A store URL and, unless the URL says it, a namespace."""

    url: str
    namespace: str | None
    deadline: float | None = None

    @property
    def options(self) -> dict[str, Any]:
        """The namespace to pass (unless the URL names the same one) and the retry deadline."""
        retry = {} if self.deadline is None else {"retry": RetryPolicy(deadline=self.deadline)}
        if self.namespace is None:
            return retry
        in_url = _url_namespace(self.url)
        if in_url is None:
            return {"namespace": self.namespace, **retry}
        if in_url != self.namespace:
            raise click.UsageError(f"the URL says namespace {in_url!r}, --namespace (or "
                                   f"CHATLEDGER_NAMESPACE) says {self.namespace!r}")
        return retry

    @property
    def namespace_in_use(self) -> str:
        """--namespace, else the URL's, else the store's default; a conflict is a UsageError."""
        return (self.options.get("namespace") or _url_namespace(self.url)
                or StoreOptions.namespace)

    @property
    def cli_args(self) -> list[str]:
        """The same target as arguments for another ``chatledger`` process."""
        deadline = [] if self.deadline is None else ["--deadline", str(self.deadline)]
        namespace = ["--namespace", self.namespace] if self.namespace else []
        return ["--url", self.url, *namespace, *deadline]

    @contextmanager
    def store(self, *, existing: bool = False) -> Iterator[Store]:
        """Open the store and reach it; ``existing``: a command that only reads creates no file."""
        options = self.options  # a namespace conflict is a usage error, raised as such
        with reported_errors(self.url):
            if existing and (missing := missing_database(self.url)):
                raise Unusable(f"no SQLite database at {missing}")
            ours = _no_new_store(self.url) if existing else {}  # create=false, added here
            try:
                store = opened(self.url, {**options, **ours, **encryption()},
                               wait_if_refused=self.waits)
            except NoStoreHere as exc:
                if not ours:  # the URL says create=false: the store's words fit
                    raise ConfigError(str(exc)) from None
                parsed = sqlite_url(self.url)
                raise Unusable(f"{parsed.path if parsed else self.url} holds no chatledger "
                               "store (an empty file, or another program's database): a "
                               "command that only reads makes none there; check the URL"
                               ) from exc
            with store:
                reach(store, self.url, wait_if_refused=self.waits)
                yield store

    def store_options(self) -> StoreOptions:
        """The options the store would open with, without opening it."""
        with reported_errors(self.url):
            return split_options(parse_url(self.url).query, self.options)[0]

    @property
    def waits(self) -> bool:
        """Whether a deadline was asked for (--deadline, or the URL's retry_deadline)."""
        return self.deadline is not None or _url_option(self.url, "retry_deadline") is not None


KEYRING_VARIABLE = "CHATLEDGER_KEYRING"


def encryption() -> dict[str, Keyring]:
    """The keyring of $CHATLEDGER_KEYRING (never an option: a key typed on a
    command line stays in the shell's history and in ps)."""
    text = os.environ.get(KEYRING_VARIABLE)
    return {} if not text else {"encryption": Keyring.parse(text)}


def target_options(command: F) -> F:
    """Let ``--url`` and ``--namespace`` follow the command's name as well as precede it.

    The group alone reads the environment and the default, so an option after
    the command is only ever typed by hand, and it wins over the group's value:
    the later of two placements wins, as the last of a repeated option does.
    """
    command = click.option(
        "--deadline", "deadline_after", type=DEADLINE,
        expose_value=False, callback=_override("deadline"), metavar="SECONDS",
        help="Give up on an unreachable store after this long (default 10; a refused "
             "connection is retried only when given).",
    )(command)
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
    return _url_option(url, "namespace")


def _url_option(url: str, name: str) -> str | None:
    try:
        return parse_url(url).query.get(name)
    except ChatLedgerError:
        return None  # open_store will say what is wrong with the URL


def sqlite_url(url: str) -> StoreURL | None:
    """``url`` parsed, if it is a good ``sqlite://`` URL (None for any other: open_store
    says what is wrong with a bad one)."""
    try:
        parsed = parse_url(url)
    except ChatLedgerError:
        return None
    return parsed if parsed.scheme == "sqlite" else None


def missing_database(url: str) -> str | None:
    """The path of a ``sqlite://`` URL's file when it does not exist (a typo, surely)."""
    parsed = sqlite_url(url)
    if parsed is None or not parsed.path or Path(parsed.path).exists():
        return None
    return parsed.path


def _no_new_store(url: str) -> dict[str, bool]:
    """``create=False`` for a ``sqlite://`` URL that does not say otherwise: a command
    on an existing store leaves a file that holds none (another program's database,
    an empty file) as it was, and says so, where opening it would make a store there."""
    parsed = sqlite_url(url)
    return {"create": False} if parsed is not None and "create" not in parsed.query else {}


PROBE = "chatledger-cli-probe"  # a session id only ever asked about, never written


def opened(url: str, options: dict[str, Any], *, wait_if_refused: bool = False) -> Store:
    """Open the store as :func:`reach` reaches it: one attempt, then a word and retries.

    A backend that connects when it opens (PostgreSQL checks its schema) meets
    a refused connection here, not in ``reach``.
    """
    started, shown = time.monotonic(), parse_url(url).redacted()
    try:
        return open_store_once(url, **options)
    except BackendUnavailable as exc:
        _unanswered(exc, shown, url, _deadline(url, options), wait_if_refused)
    try:
        store = open_store_once(url, retried=True, **options)
    except BackendUnavailable as exc:
        raise Unusable(f"gave up on {shown} after {time.monotonic() - started:.1f} s: "
                       f"{explain(exc, url)}") from exc
    note(f"chatledger: {shown} answered after {time.monotonic() - started:.1f} s")
    return store


def reach(store: Store, url: str, *, wait_if_refused: bool = False) -> None:
    """Make sure the store answers before the command starts; say so while retrying.

    One attempt without retries first (the backend's own call): a server that
    answers costs one round trip and prints nothing. A refused connection ends
    the command there (unless ``wait_if_refused``): on a command line it is a
    typo'd host or port far more often than a server about to come up. Any
    other failure gets a line on stderr at once, then the store's own retries
    up to its deadline, and the time it tried in the error, so nobody stares
    at a silent terminal.
    """
    started = time.monotonic()
    try:
        raw_access(store).info(PROBE)
        return
    except BackendUnavailable as exc:
        _unanswered(exc, store.url, url, store.options.retry.deadline, wait_if_refused)
    try:
        store.session(PROBE).info()
    except BackendUnavailable as exc:
        raise Unusable(f"gave up on {store.url} after {time.monotonic() - started:.1f} s: "
                      f"{explain(exc, url)}") from exc
    note(f"chatledger: {store.url} answered after {time.monotonic() - started:.1f} s")


def _unanswered(exc: BackendUnavailable, shown: str, url: str, deadline: float,
                wait_if_refused: bool) -> None:
    """End the command on a refused connection (unless told to wait); else say it retries."""
    refused = refused_by(exc)
    if refused is not None and not wait_if_refused:
        raise Unusable(f"{refused} refused the connection ({shown}): nothing listens "
                       "there; check the host and port, or give --deadline SECONDS to "
                       "wait for a server that is starting") from exc
    note(f"chatledger: {shown} does not answer ({explain(exc, url)}); retrying "
         f"for up to {deadline:g} s more")


def _deadline(url: str, options: dict[str, Any]) -> float:
    """The retry deadline the store will open with: the option's, the URL's, or the default."""
    retry = options.get("retry")
    if isinstance(retry, RetryPolicy):
        return retry.deadline
    in_url = _url_option(url, "retry_deadline")
    return float(in_url) if in_url is not None else RetryPolicy().deadline
