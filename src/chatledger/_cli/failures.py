"""Exit codes, and errors as one clear line with the password hidden.

0: done, nothing wrong. 1: the command ran and found something wrong: a check
failed, an anomaly (lost memory, a corrupt entry, a conflict), a session that
does not exist, an import refused, a confirmation declined. 2: the command
could not run: bad usage, a bad URL or option, a server it could not reach.
3: the command printed or exported what it could read of a session holding
entries that cannot be decoded, and said which (``show``, ``export
--skip-damaged``): a script notices that the output is not the whole session.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import click

from .._errors import BackendError, ChatLedgerError, ConfigError
from .._url import parse_url, redact

OK, FAILED, UNUSABLE, DAMAGED = 0, 1, 2, 3


class Failure(click.ClickException):
    """Something wrong that the command found, reported in one line: exit 1."""

    exit_code = FAILED


class Unusable(Failure):
    """A command that could not run (a server, file or extra it needs): exit 2."""

    exit_code = UNUSABLE


def failure(message: str, exit_code: int) -> Failure:
    """The one-line error for ``exit_code`` (click keeps the code on the class)."""
    return Unusable(message) if exit_code == UNUSABLE else Failure(message)


def hide_password(text: str, url: str) -> str:
    """``text`` with the URL's password (however a driver quoted it) replaced by ***."""
    try:
        password = parse_url(url).password
    except ChatLedgerError:
        password = None
    text = text.replace(url, redact(url))
    return text.replace(password, "***") if password else text


def explain(exc: ChatLedgerError, url: str) -> str:
    """The error as one line, with a hint where the driver's words mislead."""
    line = hide_password(f"{type(exc).__name__}: {exc}", url)
    hint = _hint(str(exc), url)
    return f"{line}\n  hint: {hint}" if hint else line


def _hint(text: str, url: str) -> str | None:
    scheme = url.partition("://")[0].lower()
    if scheme == "rediss" and any(word in text for word in ("Timeout", "SSL", "TLS")):
        return ("rediss:// speaks TLS; a server that does not (a plaintext port) never "
                "answers the handshake: use redis:// for it, or the server's TLS port")
    if scheme == "redis+sentinel" and "unknown command 'SENTINEL" in text:
        return ("the address in the URL is a Redis server, not a Sentinel: for a plain "
                "server use redis://host:port, for Sentinel give the sentinels' addresses")
    if scheme == "redis+sentinel" and "as a Sentinel (auth:" in text:
        return ("the address asked for a password: a plain Redis server (for it use "
                "redis://host:port), or a Sentinel that needs ?sentinel_password= (the "
                "URL's own password is the master's)")
    return None


# How redis-py names the address it could not connect to: "Error 111 connecting to h:p."
_CONNECTING_TO = re.compile(r"connecting to (.+?)\.(?:\s|$)")
_LIBPQ_REFUSED = re.compile(r'server at "([^"]+)", port (\d+) failed: Connection refused')


def refused_by(exc: BaseException) -> str | None:
    """Who refused the connection, when a refusal is what ``exc`` comes from; else None.

    The errno is in a ConnectionRefusedError down the chain, the address in the
    driver's error just above it (else the store's URL names it).
    """
    above: BaseException | None = None
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            found = _CONNECTING_TO.search(str(above or ""))
            return found.group(1) if found else "the server"
        libpq = _LIBPQ_REFUSED.search(str(current))  # psycopg: libpq's words, no errno
        if libpq:
            return f"{libpq.group(1)}:{libpq.group(2)}"
        above, current = current, current.__cause__ or current.__context__
    return None


def exit_code_of(exc: ChatLedgerError) -> int:
    """A URL, an option or a server that cannot be used: 2; what a store reported: 1."""
    return UNUSABLE if isinstance(exc, (ConfigError, BackendError)) else FAILED


@contextmanager
def reported_errors(url: str) -> Iterator[None]:
    """Show errors as one line with the right exit code, never as a traceback."""
    try:
        yield
    except ChatLedgerError as exc:
        raise failure(explain(exc, url), exit_code_of(exc)) from exc
    except ValueError as exc:  # a bad session id or prefix typed on the command line
        raise click.UsageError(hide_password(str(exc), url)) from exc
