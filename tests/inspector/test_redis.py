"""The inspector on Redis: pages follow SCAN's order, each id on exactly one page."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from chatledger import open_store, user
from chatledger._inspector.app import inspector_app
from chatledger.testing._redis_server import RedisServer


def test_paging_through_a_redis_namespace_shows_each_session_once(
        redis_server: RedisServer) -> None:
    ids = [f"chat-{n:02d}" for n in range(30)]
    with open_store(redis_server.url, namespace="inspector-pages") as store:
        for session_id in ids:
            store.session(session_id).append([user(f"hi from {session_id}")])
    shown: list[str] = []
    with TestClient(inspector_app(redis_server.url, namespace="inspector-pages")) as client:
        for page in range(1, 10):
            text = client.get("/sessions", params={"limit": 7, "page": page}).text
            on_page = re.findall(r'class="session" href="[^"]*">([^<]*)</a>', text)
            assert on_page == sorted(on_page)
            shown += on_page
            if 'rel="next"' not in text:
                break
        assert page == 5
        conversation = client.get("/session", params={"id": "chat-07"}).text
    assert sorted(shown) == ids
    assert "hi from chat-07" in conversation
