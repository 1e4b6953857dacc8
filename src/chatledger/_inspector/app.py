"""The inspector's ASGI app: GET routes only, each a page of one view.

The store is opened when the app starts (its lifespan) with Prometheus metrics
on a registry of the app's own, and closed when it stops. A route that meets a
bad query parameter answers 400 with the reason, an unknown session or thread
404, a store that cannot answer 503 with the store's own error (whose URLs are
redacted); no page ever shows a traceback. A stored entry that cannot be
decoded is shown as damaged (its seq and why) among the others: a conversation's
message in its place, a LangGraph store item in its row, a thread's checkpoint
namespace where its listing stopped. An entry that no view expects to be
damaged answers 500, naming the session, the entry and why.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from prometheus_client import CollectorRegistry
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from .._async.store import AsyncStore, open_async_store, raw_access
from .._doctor import Report
from .._errors import ChatLedgerError, CorruptEntryError
from .._wording import install_hint
from . import items as store_items
from . import listing, metrics
from . import threads as langgraph_view
from .access import ASGIApp, LocalHosts, TokenGate
from .conversation import conversation
from .listing import seconds_left, sessions_page
from .query import BadRequest, choice, number, text
from .render import render
from .threads import thread_checkpoints, thread_of, threads_page

__all__ = ["inspector_app"]

Page = Callable[[Request, AsyncStore], Awaitable[Response]]

# Defence in depth behind autoescaping: no script runs in these pages at all,
# and a token given in a URL does not leak through the Referer header.
_HEADERS = {"content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; "
                                       "img-src 'self'; form-action 'self'",
            "x-content-type-options": "nosniff", "referrer-policy": "no-referrer",
            "x-frame-options": "DENY", "cache-control": "no-store"}


def inspector_app(url: str, *, token: str | None = None, serde: Any = None,
                  local_only: bool = False, **options: Any) -> ASGIApp:
    """The inspector of the store at ``url`` (``options`` as ``open_store``'s); with a
    ``token`` (an empty one is none), every request must present it; ``local_only``
    (served on loopback without one): only requests addressed to this machine's names
    are answered. ``serde``: the serializer LangGraph threads were written with
    (default: LangGraph's own)."""
    registry = CollectorRegistry()

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        store = await open_async_store(url, prometheus=registry, **options)
        app.state.store, app.state.registry, app.state.serde = store, registry, serde
        try:
            yield
        finally:
            await store.close()

    routes = [Route("/", _home), *(Route(path, _page(view)) for path, view in _VIEWS.items())]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={
        HTTPException: _http_error, BadRequest: _bad_request, ChatLedgerError: _store_error})
    if token:
        return TokenGate(app, token)
    return LocalHosts(app) if local_only else app


def _page(view: Page) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        response = await view(request, request.app.state.store)
        response.headers.update(_HEADERS)
        return response
    return endpoint


async def _home(request: Request) -> Response:
    return RedirectResponse("/sessions", status_code=302)


def _html(request: Request, template: str, status: int = 200,
          headers: dict[str, str] | None = None, **context: Any) -> HTMLResponse:
    store: AsyncStore | None = getattr(request.app.state, "store", None)
    page = render(template, store=store, path=request.url.path, **context)
    return HTMLResponse(page, status_code=status, headers={**_HEADERS, **(headers or {})})


async def _sessions(request: Request, store: AsyncStore) -> Response:
    query = request.query_params
    prefix = text(query, "prefix")
    sort = choice(query, "sort", ("id", "updated"))
    limit = number(query, "limit", 50, low=1, high=500)
    page = await sessions_page(store, prefix, sort, number(query, "page", 1, low=1), limit)
    return _html(request, "sessions.html", page=page, prefix=prefix, sort=sort, limit=limit,
                 sort_window=listing.SORT_WINDOW, thread_of=thread_of)


async def _conversation(request: Request, store: AsyncStore) -> Response:
    query = request.query_params
    session_id = _required(query, "id")
    limit = number(query, "limit", 100, low=1, high=1000)
    after = number(query, "after", -1, low=0)
    info = await store.session(session_id).info()
    if info is None:
        raise HTTPException(404, f"no session {session_id!r} in namespace {store.namespace!r}")
    shown = await conversation(store, session_id, info, None if after < 0 else after, limit)
    return _html(request, "conversation.html", c=shown, limit=limit,
                 expires_in=seconds_left(info.expires_at), thread=thread_of(session_id))


async def _threads(request: Request, store: AsyncStore) -> Response:
    query = request.query_params
    limit = number(query, "limit", 50, low=1, high=500)
    page = number(query, "page", 1, low=1)
    threads, more = await threads_page(store, page, limit)
    return _html(request, "threads.html", threads=threads, page=page, more=more, limit=limit)


async def _thread(request: Request, store: AsyncStore) -> Response:
    thread_id = _required(request.query_params, "id")
    limit = langgraph_view.CHECKPOINT_LIMIT
    try:
        thread = await thread_checkpoints(store, thread_id, limit, serde=request.app.state.serde)
    except ImportError:
        raise HTTPException(501, "a LangGraph thread is read through chatledger.langgraph: "
                                 f"{install_hint('langgraph')}") from None
    if thread is None:
        raise HTTPException(404, f"no LangGraph thread {thread_id!r} in namespace "
                                 f"{store.namespace!r}")
    return _html(request, "thread.html", t=thread, limit=limit)


async def _items(request: Request, store: AsyncStore) -> Response:
    namespace = tuple(request.query_params.getlist("ns"))
    limit = store_items.ITEM_LIMIT
    try:
        if not namespace:
            rows = await store_items.namespaces(store)
            return _html(request, "items.html", namespace=(), rows=rows)
        shown, more = await store_items.items_of(store, namespace, limit)
    except ImportError:
        raise HTTPException(501, "LangGraph store items are read through chatledger.langgraph: "
                                 f"{install_hint('langgraph')}") from None
    return _html(request, "items.html", namespace=namespace, items=shown, more=more,
                 limit=limit)


async def _health(request: Request, store: AsyncStore) -> Response:
    report = Report(store.url, await raw_access(store).checks())
    return _html(request, "health.html", report=report)


async def _live(request: Request, store: AsyncStore) -> Response:
    registry = request.app.state.registry
    return _html(request, "live.html", stats=metrics.operation_stats(registry),
                 totals=metrics.totals(registry))


async def _metrics(request: Request, store: AsyncStore) -> Response:
    return Response(metrics.exposition(request.app.state.registry),
                    media_type="text/plain; version=0.0.4; charset=utf-8")


def _required(query: Any, name: str) -> str:
    found = text(query, name)
    if not found:
        raise BadRequest(f"{name} is required: the page shows one, ?{name}=...")
    return found


_VIEWS: dict[str, Page] = {
    "/sessions": _sessions, "/session": _conversation,
    "/threads": _threads, "/thread": _thread, "/items": _items,
    "/health": _health, "/live": _live, "/metrics": _metrics,
}


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _html(request, "error.html", exc.status_code, dict(exc.headers or {}),
                 title=_TITLES.get(exc.status_code, "Error"), detail=exc.detail)


async def _bad_request(request: Request, exc: Exception) -> Response:
    return _html(request, "error.html", 400, title="Bad request", detail=str(exc))


async def _store_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, CorruptEntryError):  # the store answered: what it holds is damaged
        return _html(request, "error.html", 500, title="A stored entry cannot be decoded",
                     detail=f"session {exc.session!r}: stored entry seq={exc.seq} cannot be "
                            f"decoded: {exc.reason}")
    return _html(request, "error.html", 503, title="The store could not answer",
                 detail=f"{type(exc).__name__}: {exc}")


_TITLES = {404: "Not found", 405: "Method not allowed", 501: "Not installed"}
