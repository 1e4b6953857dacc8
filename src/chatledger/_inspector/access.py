"""Who may look: loopback by default, a token for anything else.

Without a token, only requests addressed to this machine's names are answered
(:class:`LocalHosts`), so that a web page cannot reach the inspector through
the user's browser by rebinding its domain to 127.0.0.1.

A token is checked on every request, from the ``Authorization: Bearer`` or
``X-Chatledger-Token`` header, else the ``?token=`` query parameter, else the
cookie that a good ``?token=`` sets (so that links within the pages, which
never carry the token, keep working). Comparisons take constant time.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs, quote, unquote

__all__ = ["COOKIE", "TOKEN_VARIABLE", "LocalHosts", "TokenGate", "check_binding",
           "is_loopback"]

TOKEN_VARIABLE = "CHATLEDGER_INSPECTOR_TOKEN"
COOKIE = "chatledger_inspector_token"

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine: ``localhost`` (and its subdomains, which
    browsers resolve to it) or a loopback address; never a name that merely starts
    with ``127.``."""
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name.strip("[]")).is_loopback
    except ValueError:
        return False


def check_binding(host: str, token: str | None) -> None:
    """Refuse to serve a store's conversations beyond this machine without a token."""
    if not is_loopback(host) and not token:
        raise ValueError(
            f"binding to {host} exposes the store's conversations to the network: give "
            f"--token TOKEN (or set {TOKEN_VARIABLE}) so that every request must present "
            "it, or bind to 127.0.0.1")


class LocalHosts:
    """ASGI middleware: 403 for a request addressed to another name than this
    machine's (its ``Host`` header). Served on loopback without a token, the
    inspector would otherwise answer a web page that rebinds its own domain to
    127.0.0.1 (DNS rebinding): the browser sends the page's name as ``Host``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not is_loopback(_host_name(scope)):
            await _plain(send, 403, b"403 Forbidden: this chatledger inspector answers only "
                                    b"requests addressed to this machine (127.0.0.1, "
                                    b"localhost, [::1]); to serve it under another name, "
                                    b"give it a token\n")
            return
        await self.app(scope, receive, send)


def _host_name(scope: Scope) -> str:
    """The name a request was addressed to: its Host header without the port."""
    host = next((v.decode("latin-1") for k, v in scope.get("headers", [])
                 if k.lower() == b"host"), "")
    if host.startswith("["):
        return host[:host.find("]") + 1]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class TokenGate:
    """ASGI middleware: 401 unless the request presents the token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        from_query = _query_token(scope)
        presented = _header_token(headers) or from_query or _cookie_token(headers)
        if presented is None or not hmac.compare_digest(presented.encode(), self._token):
            await _refuse(send)
            return
        if from_query is not None:  # remember it, so that the pages' links need no token
            send = _setting_cookie(send, from_query)
        await self.app(scope, receive, send)


def _header_token(headers: dict[str, str]) -> str | None:
    bearer = headers.get("authorization", "")
    if bearer[:7].lower() == "bearer ":
        return bearer[7:].strip()
    return headers.get("x-chatledger-token")


def _query_token(scope: Scope) -> str | None:
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token")
    return values[-1] if values else None


def _cookie_token(headers: dict[str, str]) -> str | None:
    for pair in headers.get("cookie", "").split(";"):
        name, _, value = pair.strip().partition("=")
        if name == COOKIE:
            return unquote(value)
    return None


def _setting_cookie(send: Send, token: str) -> Send:
    cookie = f"{COOKIE}={quote(token, safe='')}; Path=/; HttpOnly; SameSite=Strict".encode()

    async def send_with_cookie(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", []), (b"set-cookie", cookie)]
        await send(message)
    return send_with_cookie


async def _refuse(send: Send) -> None:
    await _plain(send, 401, b"401 Unauthorized: this chatledger inspector needs its token "
                            b"(header 'Authorization: Bearer TOKEN', or ?token=TOKEN once)\n",
                 [(b"www-authenticate", b"Bearer")])


async def _plain(send: Send, status: int, body: bytes,
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), *(headers or []),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
