"""The inspector in a real browser: Playwright driving the machine's Chromium.

The app runs in uvicorn (a thread, a free loopback port) on a filled SQLite
store; one browser serves the whole module. Nothing is downloaded: Chromium is
Debian's (/usr/bin/chromium), never ``playwright install``'s.

``CHATLEDGER_SCREENSHOTS=docs/img`` also saves a 1200x800 PNG of each view
there (``scripts/screenshots`` does that for the docs).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from playwright.sync_api import Browser, Page, expect, sync_playwright

from chatledger._inspector.app import inspector_app
from chatledger.testing._ports import free_port

from ._data import CHAT_THREAD, HOSTILE, NAMESPACE, THREAD

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
# Resolved now: the screenshots' run serves the store from its own folder (served_url).
SHOTS = (Path(os.environ["CHATLEDGER_SCREENSHOTS"]).resolve()
         if os.environ.get("CHATLEDGER_SCREENSHOTS") else None)


@pytest.fixture(scope="module")
def served_url(store_url: str) -> Iterator[str]:
    """The store's URL as the inspector is given it. For the docs' screenshots, a path
    relative to the working directory, as a reader would type it: the page's header
    shows the URL, and a pytest temporary path there explains nothing."""
    if not SHOTS:
        yield store_url
        return
    database = Path(store_url.removeprefix("sqlite:///"))
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(database.parent)
        yield f"sqlite:///{database.name}"


@pytest.fixture(scope="module")
def base_url(served_url: str) -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(inspector_app(served_url, namespace=NAMESPACE),
                                           host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60  # a readiness wait, not a timed assertion
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        opened = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield opened
        opened.close()


@pytest.fixture
def page(browser: Browser, base_url: str) -> Iterator[Page]:
    context = browser.new_context(base_url=base_url, viewport={"width": 1200, "height": 800})
    opened = context.new_page()
    yield opened
    context.close()


def shot(page: Page, name: str) -> None:
    if SHOTS:
        page.screenshot(path=str(SHOTS / f"inspector-{name}.png"))


def test_search_sessions_then_read_a_conversation(page: Page) -> None:
    page.goto("/sessions")
    expect(page.locator("a.session").first).to_have_text("ada")
    page.fill("input[name=prefix]", "user-05")
    page.click("button[type=submit]")
    expect(page.locator("a.session")).to_have_count(10)
    expect(page.locator("a.session").first).to_have_text("user-050")
    page.fill("input[name=prefix]", "")
    page.select_option("select[name=sort]", "updated")
    page.click("button[type=submit]")
    shot(page, "sessions")
    page.click("a.session >> text=ada")
    expect(page.locator("h1")).to_have_text("Session ada")
    expect(page.locator(".msg .role")).to_have_count(6)
    expect(page.locator(".msg.user pre.content").last).to_have_text(HOSTILE)
    assert page.evaluate("typeof window.__pwned") == "undefined"
    shot(page, "conversation")
    page.locator(".msg.assistant").last.locator("summary").click()
    expect(page.locator(".msg.assistant").last.locator("details pre")).to_contain_text(
        '"tokens": 42')
    page.click("a.answers")
    assert page.url.endswith("#call-" + page.get_attribute("a.result", "href").split("-")[1])
    expect(page.locator(".call b")).to_have_text("lookup_order")


def test_click_through_a_langgraph_thread(page: Page) -> None:
    page.goto("/threads")
    page.click(f"a.thread >> text={THREAD}")
    expect(page.locator("h1")).to_have_text(f"LangGraph thread {THREAD}")
    checkpoints = page.locator(".checkpoint")
    expect(checkpoints).to_have_count(7)
    expect(page.locator(".fork")).to_have_text("fork: 2 children")
    expect(page.locator("details.writes", has_text="<b>pending</b>")).to_have_count(1)
    expect(page.locator(".checkpoint.branch")).to_have_count(3)
    shot(page, "thread")
    parent = page.locator("a.parent").first
    target = parent.get_attribute("href")
    parent.click()
    assert target is not None and page.url.endswith(target)
    expect(page.locator(target)).to_be_in_viewport()


def test_a_thread_reads_as_its_conversation(page: Page) -> None:
    page.goto("/threads")
    page.click(f"a.thread >> text={CHAT_THREAD}")
    expect(page.locator(".msg .role")).to_have_text(["user", "assistant", "tool",
                                                     "assistant"])
    expect(page.locator(".msg.user pre.content")).to_have_text("Where is <order> 123?")
    shot(page, "thread-conversation")
    page.click("a.answers")
    expect(page.locator(".call b")).to_have_text("lookup_order")


def test_health_live_metrics_and_prometheus_text(page: Page) -> None:
    page.goto("/sessions")  # a store call of its own to list, whichever tests ran before
    page.goto("/health")
    expect(page.locator("#checks td.status").first).to_have_text("ok")
    shot(page, "health")
    page.click("text=Live metrics")
    expect(page.locator("#operations")).to_contain_text("list_sessions")
    shot(page, "live")
    response = page.goto("/metrics")
    assert response is not None and response.ok
    assert "chatledger_operation_duration_seconds_bucket" in page.content()


def test_click_through_the_langgraph_store(page: Page) -> None:
    page.goto("/items")
    expect(page.locator("a.namespace")).to_have_count(3)
    page.click("a.namespace >> text=users / u1 / prefs")
    expect(page.locator("h1")).to_have_text("Namespace users / u1 / prefs")
    expect(page.locator("tr.item")).to_have_count(3)
    expect(page.locator("tr.item.expired td.mono")).to_have_text("old")
    shot(page, "items")
    page.click("text=all namespaces")
    page.click("a.namespace >> text=users / u2")
    expect(page.locator("tr.item pre")).to_contain_text("<script>window.__pwned=1</script>")
    assert page.evaluate("typeof window.__pwned") == "undefined"
