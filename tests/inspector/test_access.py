"""Who may look (the token), what no page shows (a password), and a store that fails."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import redis
from starlette.testclient import TestClient

from chatledger import RetryPolicy, open_store, user
from chatledger._inspector.access import COOKIE, check_binding
from chatledger._inspector.app import inspector_app
from chatledger._inspector.listing import ids_window
from chatledger._inspector.threads import thread_of, thread_of_index
from chatledger.testing._redis_server import RedisServer

from ._data import NAMESPACE

TOKEN = "s3cret token/with;odd=chars"


@pytest.fixture(scope="module")
def guarded(store_url: str) -> Iterator[TestClient]:
    with TestClient(inspector_app(store_url, token=TOKEN, namespace=NAMESPACE)) as opened:
        yield opened


def test_without_the_token_every_route_is_refused(guarded: TestClient) -> None:
    for route in ("/sessions", "/session?id=ada", "/metrics", "/nowhere"):
        response = guarded.get(route)
        assert response.status_code == 401, route
        assert "needs its token" in response.text and "ada" not in response.text
    assert guarded.get("/sessions", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert guarded.get("/sessions", params={"token": TOKEN[:-1]}).status_code == 401


@pytest.mark.parametrize("headers", [{"Authorization": f"Bearer {TOKEN}"},
                                     {"authorization": f"bearer {TOKEN}"},
                                     {"X-Chatledger-Token": TOKEN}])
def test_the_token_in_a_header_lets_a_request_in(guarded: TestClient,
                                                 headers: dict[str, str]) -> None:
    response = guarded.get("/sessions", headers=headers)
    assert response.status_code == 200 and "user-001" in response.text
    assert "set-cookie" not in response.headers


def test_the_token_in_the_query_sets_a_cookie_that_the_next_pages_use(store_url: str) -> None:
    with TestClient(inspector_app(store_url, token=TOKEN, namespace=NAMESPACE)) as fresh:
        first = fresh.get("/sessions", params={"token": TOKEN})
        assert first.status_code == 200
        assert "HttpOnly" in first.headers["set-cookie"]
        assert "SameSite=Strict" in first.headers["set-cookie"]
        assert fresh.get("/session", params={"id": "ada"}).status_code == 200  # the cookie
        fresh.cookies.clear()
        assert fresh.get("/session", params={"id": "ada"}).status_code == 401
        fresh.cookies.set(COOKIE, "not-it")
        assert fresh.get("/sessions").status_code == 401


def test_an_empty_token_is_no_token(store_url: str) -> None:
    with TestClient(inspector_app(store_url, token="", namespace=NAMESPACE)) as open_to_all:
        assert open_to_all.get("/sessions").status_code == 200


def test_binding_beyond_loopback_needs_a_token() -> None:
    for host in ("127.0.0.1", "127.0.0.2", "::1", "localhost"):
        check_binding(host, None)
    check_binding("0.0.0.0", "t")
    with pytest.raises(ValueError, match=r"binding to 0\.0\.0\.0 exposes") as refused:
        check_binding("0.0.0.0", None)
    assert "CHATLEDGER_INSPECTOR_TOKEN" in str(refused.value)
    with pytest.raises(ValueError, match="--token"):
        check_binding("192.168.1.5", "")


def test_the_urls_password_appears_on_no_page(redis_server: RedisServer) -> None:
    password = "pa55-in-the-url"
    admin = redis.Redis(host=redis_server.host, port=redis_server.port)
    admin.execute_command("ACL", "SETUSER", "inspector", "on", f">{password}", "~*", "&*",
                          "+@all")
    url = f"redis://inspector:{password}@{redis_server.host}:{redis_server.port}/0"
    with open_store(url, namespace="inspector-secret") as store:
        store.session(f"{password}-not").append([user("hi")])  # a session, not the secret
        store.session("ada").append([user(f"my password is not {password[::-1]}")])
    with TestClient(inspector_app(url, namespace="inspector-secret")) as client:
        pages = [client.get(route) for route in ("/sessions", "/session?id=ada", "/threads",
                                                 "/health", "/live", "/metrics",
                                                 "/session?id=gone", "/sessions?page=x")]
    assert [p.status_code for p in pages] == [200, 200, 200, 200, 200, 200, 404, 400]
    for page in pages:
        assert f":{password}@" not in page.text
    assert "redis://inspector:***@" in pages[0].text


def test_a_damaged_entry_is_shown_as_damaged_without_a_traceback(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/broken.db"
    with open_store(url) as store:
        store.session("broken").append([user("fine")])
        store._backend.corrupt_entry("broken", 1, b"\xff not an entry")
    with TestClient(inspector_app(url)) as client:
        response = client.get("/session", params={"id": "broken"})
    assert response.status_code == 200  # the page is where a user diagnoses the session
    assert response.text.count('class="msg damaged"') == 1
    assert "stored entry seq=1 cannot be decoded: unknown format byte" in response.text
    assert "could not answer" not in response.text and "Traceback" not in response.text


def test_a_store_that_cannot_answer_is_a_503_without_a_traceback() -> None:
    server = RedisServer().start()
    try:
        url = f"redis://{server.host}:{server.port}/0"
        with TestClient(inspector_app(url, timeout=0.5, retry=RetryPolicy(attempts=1))) as client:
            server.kill()
            response = client.get("/sessions")
    finally:
        server.stop()
    assert response.status_code == 503
    assert "The store could not answer" in response.text
    assert "BackendUnavailable" in response.text and "Traceback" not in response.text


def test_a_window_counts_an_id_the_listing_repeats_once() -> None:
    async def ids() -> AsyncIterator[str]:
        for found in ["a", "b", "a", "c", "b", "d", "e"]:
            yield found

    assert asyncio.run(ids_window(ids(), 1, 2)) == (["b", "c"], True)
    assert asyncio.run(ids_window(ids(), 3, 5)) == (["d", "e"], False)


@pytest.mark.parametrize(("session", "thread", "index"), [
    ("lg:2:t1", "t1", True), ("lg:2:t1:", "t1", False), ("lg:2:t1:sub", "t1", False),
    ("lg:3:a:b:ns", "a:b", False), ("lg:3:a:b", "a:b", True), ("lg:2:t", None, False),
    ("lg:2:t12", None, False), ("lg:x:t1", None, False), ("lg:t1", None, False),
    ("user-1", None, False), ("lg:0:", None, False),
])
def test_langgraph_sessions_are_told_from_others(session: str, thread: str | None,
                                                 index: bool) -> None:
    assert thread_of(session) == thread
    assert thread_of_index(session) == (thread if index else None)


@pytest.mark.parametrize(("host", "answered"), [
    ("127.0.0.1:8484", True), ("localhost:8484", True), ("[::1]:8484", True),
    ("127.0.0.2", True), ("app.localhost", True), ("LOCALHOST.", True),
    ("attacker.example", False), ("attacker.example:8484", False),
    ("127.attacker.example", False), ("192.168.1.5:8484", False), ("", False),
])
def test_served_without_a_token_only_this_machines_names_are_answered(
        store_url: str, host: str, answered: bool) -> None:
    """A page that rebinds its domain to 127.0.0.1 reaches the inspector through the
    browser with its own name as Host (DNS rebinding): refused."""
    app = inspector_app(store_url, namespace=NAMESPACE, local_only=True)
    with TestClient(app, base_url="http://127.0.0.1:8484") as client:
        response = client.get("/session", params={"id": "ada"}, headers={"Host": host})
    assert (response.status_code == 200) is answered, response.text
    if not answered:
        assert response.status_code == 403 and "addressed to this machine" in response.text


def test_a_name_that_starts_like_a_loopback_address_is_not_loopback() -> None:
    with pytest.raises(ValueError, match="--token"):
        check_binding("127.attacker.example", None)
    check_binding("127.0.0.3", None)
