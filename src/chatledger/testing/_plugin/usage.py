"""What the plugin accepts, checked before any test runs.

A typo in the marker, a URL given as a string instead of a list, an unknown URL
scheme or a ttl that is not seconds would otherwise pass silently (``url=`` is
ignored, ``urls="sqlite://"`` is nine one-character URLs) or error every test
of the run; each is one :class:`pytest.UsageError` naming the bad value and
what is accepted instead.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from ..._backends import known_schemes
from ..._errors import ConfigError
from ..._url import parse_url, redact
from .targets import DEFAULT_URLS, SERVER_WORDS

__all__ = ["MARKER_ARGUMENTS", "check_marker", "check_ttl_once", "check_url", "configured_urls",
           "seconds"]

MARKER_ARGUMENTS = ("urls", "ttl", "options")
_MARKER = "@pytest.mark.chatledger"
_USAGE = "urls=[URL, ...], ttl=SECONDS, options={...}"


def check_url(url: object, where: str) -> None:
    """A configured URL: ``redis``, ``postgres`` or ``dynamodb``, a default, or a URL of a
    known scheme."""
    if url in SERVER_WORDS or url in DEFAULT_URLS:
        return
    schemes = known_schemes()
    accepted = ("accepted: 'redis', 'postgres' or 'dynamodb' (a private server) or a URL of scheme "
                f"{', '.join(schemes)}")
    if not isinstance(url, str):
        raise pytest.UsageError(f"chatledger: {where}: {url!r} is not a URL; {accepted}")
    try:
        parsed = parse_url(url)
    except ConfigError as exc:  # no scheme, a bad port: the URL parser says which
        raise pytest.UsageError(f"chatledger: {where}: {exc}; {accepted}") from None
    if parsed.scheme not in schemes:
        raise pytest.UsageError(f"chatledger: {where}: unknown scheme {parsed.scheme!r} in "
                                f"{redact(url)!r}; {accepted}")
    if "namespace" in parsed.query:
        raise pytest.UsageError(f"chatledger: {where}: {redact(url)!r} names a namespace; "
                                "each test runs in a namespace of its own: drop ?namespace=")


def check_ttl_once(urls: list[str], where: str) -> None:
    """A ttl given to the plugin and in a configured URL: the store would refuse it twice
    in every test."""
    for url in urls:
        if url not in SERVER_WORDS and url not in DEFAULT_URLS and "ttl" in parse_url(url).query:
            raise pytest.UsageError(f"chatledger: {where} and ?ttl= in {redact(url)!r}: give "
                                    "the ttl once")


def seconds(ttl: object, where: str) -> float:
    """A ttl from the command line, the ini file or the marker, as seconds."""
    try:
        value = float(ttl)  # type: ignore[arg-type]  # anything a user typed; checked here
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise pytest.UsageError(f"chatledger: {where}: ttl={ttl!r} is not seconds; "
                                "accepted: a number above 0, e.g. 3600") from None
    return value


def check_marker(marker: pytest.Mark, test: str) -> None:
    """The arguments of one ``@pytest.mark.chatledger`` on ``test`` (a node id)."""
    where = f"{_MARKER} on {test}"
    if marker.args:
        raise pytest.UsageError(f"chatledger: {where} takes keywords only, got "
                                f"{marker.args[0]!r}{_urls_hint(marker.args[0])}; "
                                f"accepted: {_USAGE}")
    for name in marker.kwargs:
        if name not in MARKER_ARGUMENTS:
            raise pytest.UsageError(f"chatledger: {where}: unknown argument {name}="
                                    f"{_name_hint(name)}; accepted: {_USAGE}")
    _check_urls(marker.kwargs.get("urls"), where)
    if marker.kwargs.get("ttl") is not None:
        seconds(marker.kwargs["ttl"], where)
    options = marker.kwargs.get("options")
    if options is not None and not isinstance(options, Mapping):
        raise pytest.UsageError(f"chatledger: {where}: options={options!r} is not a dict; "
                                "accepted: options={'timeout': 1.0, ...}")


def _check_urls(urls: object, where: str) -> None:
    if urls is None:
        return
    # A string is a sequence too: urls="sqlite://" would be nine one-letter URLs.
    if isinstance(urls, (str, bytes)) or not isinstance(urls, Sequence):
        raise pytest.UsageError(f"chatledger: {where}: urls={urls!r} is not a list; "
                                f"accepted: a list of URLs, e.g. urls=[{urls!r}]")
    for url in urls:
        check_url(url, f"{where}, urls=")


def _urls_hint(argument: object) -> str:
    return f" (did you mean urls=[{argument!r}]?)" if isinstance(argument, str) else ""


def _name_hint(name: str) -> str:
    close = difflib.get_close_matches(name, MARKER_ARGUMENTS, n=1)
    return f" (did you mean {close[0]}=?)" if close else ""


def configured_urls(config: pytest.Config) -> tuple[list[Any], str]:
    """The URLs of the command line, else of the ini file, and where they came from."""
    given = config.getoption("chatledger_urls")
    if given:
        return list(given), "--chatledger-url"
    return list(config.getini("chatledger_urls")), "the ini's chatledger_urls"
