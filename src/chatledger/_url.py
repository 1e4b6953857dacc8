"""Store URLs, parsed once into a typed value."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit

from ._errors import ConfigError

__all__ = ["StoreURL", "parse_url", "redact", "secret_kept"]


@dataclass(frozen=True)
class StoreURL:
    """A parsed store URL; ``hosts`` holds every ``host:port`` of the netloc."""

    scheme: str
    hosts: list[tuple[str, int | None]] = field(default_factory=list)
    username: str | None = None
    password: str | None = None
    path: str = ""
    query: dict[str, str] = field(default_factory=dict)
    raw: str = ""

    def redacted(self) -> str:
        """The URL with its password hidden, for messages and logs."""
        return redact(self.raw)


# Query options that hold a secret, e.g. sentinel_password=...
_SECRET_OPTION = re.compile(r"([?&][^=&#]*password[^=&#]*=)[^&#]*", re.IGNORECASE)


def redact(url: str) -> str:
    """``url`` with every password replaced by ``***``, however it is written.

    The password of ``user:password@`` (split at the last ``@`` of the host
    part, as the parser does) and any ``...password=`` query option. Works on
    text that does not parse as a store URL too, so that an error about a bad
    URL never shows the secret in it.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return _SECRET_OPTION.sub(r"\1***", url)
    user, colon, after_user = rest.partition(":")
    if colon and "@" in after_user and not any(c in user for c in "/?@"):
        # A password may hold "/", "?" or "@" that were not percent-encoded: hide
        # everything up to the last "@" before the host, wherever the URL "ends".
        password_end = _last_userinfo_at(after_user)
        if password_end is not None:
            rest = f"{user}:***{after_user[password_end:]}"
    end = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    netloc, tail = rest[:end], rest[end:]
    userinfo, at, hosts = netloc.rpartition("@")
    if at and ":" in userinfo:
        netloc = f"{userinfo.split(':', 1)[0]}:***@{hosts}"
    return f"{scheme}://{netloc}" + _SECRET_OPTION.sub(r"\1***", tail)


def _last_userinfo_at(text: str) -> int | None:
    """Where the userinfo's ``@`` is in ``text`` (what follows ``user:``), if any.

    The last ``@`` followed by something that looks like a host list: a query
    option holding an ``@`` (``?client_name=a@b``) is not mistaken for it
    unless nothing else could be.
    """
    candidates = [i for i, char in enumerate(text) if char == "@"]
    for index in reversed(candidates):
        host = re.split(r"[/?#]", text[index + 1:], maxsplit=1)[0]
        if host and re.fullmatch(r"[\w.\-:,\[\]]+", host):
            return index
    return None


def parse_url(url: str) -> StoreURL:
    """Parse ``scheme://[user[:password]@]host[:port][,host[:port]...]/path?opt=value``.

    An option given twice in the query is a ConfigError: the last one winning
    would let ``?namespace=a&namespace=b`` open another namespace than the
    reader of the URL sees first.
    """
    parsed, items = _parse(url)
    values: dict[str, list[str]] = {}
    for name, value in items:
        values.setdefault(name, []).append(value)
    repeated = [name for name, given in values.items() if len(given) > 1]
    if repeated:
        if _password_split(url):
            raise _split_password_error(url)
        told = " and ".join(
            f"{name!r} {len(values[name])} times"
            + ("" if "password" in name.lower()
               else " (" + ", ".join(repr(value) for value in values[name]) + ")")
            for name in repeated)
        raise ConfigError(f"store URL {redact(url)!r} gives option {told}; give each option "
                          "once")
    return parsed


def _schemeless(url: object) -> str:
    """Why ``url`` has no scheme, and the URL it probably meant."""
    if not isinstance(url, str):
        return f"store URL {url!r} has no scheme; try 'sqlite:///chatledger.db'"
    scheme, colon, rest = url.partition(":")
    named = len(scheme) > 1 and scheme.replace("+", "").isalpha()  # not a drive letter
    if colon and named and (rest.startswith("/") or scheme.lower() == "sqlite"):  # redis:/h
        meant = _sqlite(rest) if scheme.lower() == "sqlite" else f"{scheme}://{rest.lstrip('/')}"
        return f"store URL {url!r} needs '//' after {scheme + ':'!r}; did you mean {meant!r}?"
    if url.endswith((".db", ".sqlite", ".sqlite3")):  # a file path, as LangGraph's savers take
        return f"store URL {url!r} has no scheme; did you mean {_sqlite(url)!r}?"
    return f"store URL {url!r} has no scheme; try 'sqlite:///chatledger.db'"


def _sqlite(path: str) -> str:
    """The ``sqlite://`` URL of a file path: three slashes, then the path."""
    return f"sqlite:///{path}"


def _parse(url: str) -> tuple[StoreURL, list[tuple[str, str]]]:
    """The URL, and its query options in order (repeats kept)."""
    if not isinstance(url, str) or "://" not in url:
        raise ConfigError(_schemeless(url))
    scheme, rest = url.split("://", 1)
    rest, _, query = rest.partition("?")
    netloc, slash, path = rest.partition("/")
    userinfo, _, hostlist = netloc.rpartition("@")
    username, password = _userinfo(userinfo)
    query_items = parse_qsl(query, keep_blank_values=True, strict_parsing=False)
    parsed = StoreURL(
        scheme=scheme.lower(),
        hosts=[_host_port(item, url) for item in hostlist.split(",") if item],
        username=username,
        password=password,
        path=unquote(path) if slash else "",
        query=dict(query_items),
        raw=url,
    )
    return parsed, query_items


def _userinfo(text: str) -> tuple[str | None, str | None]:
    if not text:
        return None, None
    user, colon, password = text.partition(":")
    return unquote(user) or None, unquote(password) if colon else None


def _host_port(item: str, url: str) -> tuple[str, int | None]:
    split = urlsplit(f"//{item}")
    # With a password, item may hold part of it (one that was not percent-encoded).
    secret = "@" in url and redact(url) != url
    try:
        port = split.port
    except ValueError:
        port_text = split.netloc.rpartition(":")[2]
        if port_text.isascii() and port_text.isdigit():
            port = int(port_text)
        else:
            where = "" if secret else f" in {item!r}"
            raise ConfigError(f"bad port{where} of store URL {redact(url)!r}; a password "
                              "holding / ? # @ or : must be percent-encoded "
                              "(%2F %3F %23 %40 %3A)") from None
    if port is not None and not 1 <= port <= 65535:
        which = "a port" if secret else f"port {port}"
        raise ConfigError(f"{which} of store URL {redact(url)!r} is out of range 1-65535"
                          + (" (or its password holds / ? # @ or : that are not "
                             "percent-encoded: %2F %3F %23 %40 %3A)" if secret else ""))
    return split.hostname or "", port


@contextmanager
def secret_kept(url: str) -> Iterator[None]:
    """Turn a ConfigError about a part of ``url`` that may be its password into one that is not.

    A password holding ``/``, ``?`` or ``@`` that were not percent-encoded
    splits the URL in the wrong place: ``redis://:a@b?c@host/0`` parses as
    host ``b`` and an option ``c@host/0``, and an error naming that option
    would show part of the password. When :func:`redact` reads the URL's
    password as longer than the parser did, the error says only that.
    """
    try:
        yield
    except ConfigError:
        if _password_split(url):
            raise _split_password_error(url) from None
        raise


def _split_password_error(url: str) -> ConfigError:
    return ConfigError(
        f"store URL {redact(url)!r} cannot be read one way: its password seems to "
        "hold / ? # or @ that are not percent-encoded (%2F %3F %23 %40)")


def _password_split(url: str) -> bool:
    """Whether the parser's password is shorter than the one :func:`redact` hides."""
    _, sep, rest = url.partition("://")
    user, colon, after_user = rest.partition(":")
    if not (sep and colon and "@" in after_user) or any(c in user for c in "/?@"):
        return False
    end = _last_userinfo_at(after_user)
    return end is not None and unquote(after_user[:end]) != (_parse(url)[0].password or "")
