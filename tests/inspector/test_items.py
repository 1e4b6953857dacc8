"""The inspector's LangGraph store pages: namespaces, then the items of one."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from chatledger._inspector import items

from ._data import HOSTILE


def _namespaces(page: str) -> list[str]:
    return re.findall(r'class="namespace" href="([^"]*)"', page)


def test_namespaces_are_listed_with_their_item_counts(client: TestClient) -> None:
    page = client.get("/items").text
    assert _namespaces(page) == ["/items?ns=a%3Ab", "/items?ns=users&amp;ns=u1&amp;ns=prefs",
                                 "/items?ns=users&amp;ns=u2"]
    assert ">users / u1 / prefs</a></td><td class=\"num\">3</td>" in page
    assert 'href="/items" class="here">LangGraph store</a>' in page


def test_a_namespace_shows_each_item_with_its_value_and_expiry(client: TestClient) -> None:
    page = client.get("/items", params=[("ns", "users"), ("ns", "u1"), ("ns", "prefs")]).text
    assert "<h1>Namespace users / u1 / prefs</h1>" in page
    assert re.findall(r'<td class="mono">([^<]*)</td>', page) == ["drink", "food", "old"]
    assert "&#34;likes&#34;: &#34;pizza&#34;" in page and "ttl 60.0 min" in page
    assert page.count('class="item expired"') == 1  # "old": put an hour ago, ttl 1 minute
    assert "(not returned; stored until a sweep)" in page


def test_a_label_is_one_label_and_a_value_is_text(client: TestClient) -> None:
    assert "a label with a colon" in client.get("/items", params={"ns": "a:b"}).text
    assert "No item in this namespace." in client.get("/items", params={"ns": "a"}).text
    hostile = client.get("/items", params=[("ns", "users"), ("ns", "u2")]).text
    assert HOSTILE not in hostile and "&lt;script&gt;" in hostile


def test_a_namespace_of_many_items_shows_the_first_and_says_so(
        client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(items, "ITEM_LIMIT", 2)
    page = client.get("/items", params=[("ns", "users"), ("ns", "u1"), ("ns", "prefs")]).text
    assert re.findall(r'<td class="mono">([^<]*)</td>', page) == ["drink", "food"]
    assert "holds more than 2 items: the first 2 by key are shown" in page


def test_without_the_langgraph_extra_the_page_says_what_to_install(
        client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "chatledger.langgraph._item_layout", None)
    response = client.get("/items")
    assert response.status_code == 501 and "pip install" in response.text


def test_an_item_stored_in_parts_shows_whole_and_one_missing_its_parts_is_left_out() -> None:
    import asyncio

    from chatledger import open_async_store
    from chatledger.langgraph import AsyncLedgerStore

    async def scenario() -> list[object]:
        store = await open_async_store("memory://", max_message_bytes=4096)
        ledger = AsyncLedgerStore(store)
        await ledger.aput(("docs",), "big", {"text": "x" * 20_000})
        await ledger.aput(("docs",), "torn", {"text": "y" * 20_000})
        await store.session("lgs/docs/=torn").trim(keep_last=1)
        shown, more = await items.items_of(store, ("docs",), 10)
        await store.close()
        return [[view.key for view in shown], "x" * 20_000 in shown[0].value, more]

    assert asyncio.run(scenario()) == [["big"], True, False]


def test_an_item_expiring_past_the_year_9999_is_shown() -> None:
    import asyncio

    from chatledger import open_async_store
    from chatledger.langgraph import AsyncLedgerStore

    async def scenario() -> list[object]:
        # a ttl is at most a century; a clock near the year 9999 puts its end past it
        store = await open_async_store("memory://", clock=lambda: 253_000_000_000.0)
        await AsyncLedgerStore(store).aput(("docs",), "forever", {"v": 1}, ttl=100 * 525_600)
        shown, _ = await items.items_of(store, ("docs",), 10)
        await store.close()
        return [(view.key, view.expires and view.expires.year, view.expired) for view in shown]

    assert asyncio.run(scenario()) == [("forever", 9999, False)]


def test_a_damaged_item_is_marked_among_the_others(tmp_path: Path) -> None:
    from chatledger import open_store
    from chatledger._inspector.app import inspector_app
    from chatledger.langgraph import LedgerStore

    url = f"sqlite:///{tmp_path}/damaged.db"
    with open_store(url) as store:
        ledger = LedgerStore(store)
        for key in ("a", "b", "c"):
            ledger.put(("docs",), key, {"key": key})
        store._backend.corrupt_entry("lgs/docs/=b", 1, b"\xff not an entry")
    with TestClient(inspector_app(url)) as client:
        response = client.get("/items", params={"ns": "docs"})
    assert response.status_code == 200
    assert re.findall(r'<td class="mono">([^<]*)</td>', response.text) == ["a", "b", "c"]
    assert "&#34;key&#34;: &#34;c&#34;" in response.text
    assert response.text.count('class="item damaged"') == 1
    assert "stored entry seq=1 cannot be decoded: unknown format byte" in response.text
