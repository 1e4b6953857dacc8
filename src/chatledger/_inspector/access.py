"""Who may look: loopback by default, a token for anything else.

A token is checked on every request, from the ``Authorization: Bearer`` or
``X-Chatledger-Token`` header, else the ``?token=`` query parameter, else the
cookie that a good ``?token=`` sets (so that links within the pages, which
never carry the token, keep working). Comparisons take constant time.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qs, quote, unquote

__all__ = ["COOKIE", "TOKEN_VARIABLE", "TokenGate", "check_binding", "is_loopback"]

TOKEN_VARIABLE = "CHATLEDGER_INSPECTOR_TOKEN"
COOKIE = "chatledger_inspector_token"
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def is_loopback(host: str) -> bool:
    return host in _LOOPBACK or host.startswith("127.")


def check_binding(host: str, token: str | None) -> None:
    """Refuse to serve a store's conversations beyond this machine without a token."""
    if not is_loopback(host) and not token:
        raise ValueError(
            f"binding to {host} exposes the store's conversations to the network: give "
            f"--token TOKEN (or set {TOKEN_VARIABLE}) so that every request must present "
            "it, or bind to 127.0.0.1")


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
    body = (b"401 Unauthorized: this chatledger inspector needs its token "
            b"(header 'Authorization: Bearer TOKEN', or ?token=TOKEN once)\n")
    await send({"type": "http.response.start", "status": 401,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"www-authenticate", b"Bearer"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
