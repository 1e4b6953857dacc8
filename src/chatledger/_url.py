"""Store URLs, parsed once into a typed value."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote, urlsplit

from ._errors import ConfigError

__all__ = ["StoreURL", "parse_url", "redact"]


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
    """Parse ``scheme://[user[:password]@]host[:port][,host[:port]...]/path?opt=value``."""
    if not isinstance(url, str) or "://" not in url:
        raise ConfigError(f"store URL {url!r} has no scheme; try 'sqlite:///chatledger.db'")
    scheme, rest = url.split("://", 1)
    rest, _, query = rest.partition("?")
    netloc, slash, path = rest.partition("/")
    userinfo, _, hostlist = netloc.rpartition("@")
    username, password = _userinfo(userinfo)
    query_items = parse_qsl(query, keep_blank_values=True, strict_parsing=False)
    return StoreURL(
        scheme=scheme.lower(),
        hosts=[_host_port(item, url) for item in hostlist.split(",") if item],
        username=username,
        password=password,
        path=unquote(path) if slash else "",
        query=dict(query_items),
        raw=url,
    )


def _userinfo(text: str) -> tuple[str | None, str | None]:
    if not text:
        return None, None
    user, colon, password = text.partition(":")
    return unquote(user) or None, unquote(password) if colon else None


def _host_port(item: str, url: str) -> tuple[str, int | None]:
    split = urlsplit(f"//{item}")
    try:
        port = split.port
    except ValueError:
        where = "" if "@" in url else f" in {item!r}"  # with userinfo, item may hold secrets
        raise ConfigError(f"bad port{where} of store URL {redact(url)!r}; a password "
                          "holding / ? # @ or : must be percent-encoded "
                          "(%2F %3F %23 %40 %3A)") from None
    return split.hostname or "", port
