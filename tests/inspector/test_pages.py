"""Every page of the inspector, in process (Starlette's TestClient) on a filled SQLite store."""

from __future__ import annotations

import asyncio
import re
import sys

import pytest
from starlette.testclient import TestClient

from chatledger import open_async_store, open_store
from chatledger._inspector import listing, threads

from ._data import CHAT_THREAD, HOSTILE, NAMESPACE, PAGED, THREAD


def sessions_on(page: str) -> list[str]:
    return re.findall(r'class="session" href="/session\?id=[^"]*">([^<]*)</a>', page)


def test_home_leads_to_the_sessions(client: TestClient) -> None:
    response = client.get("/", follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (302, "/sessions")


def test_sessions_are_listed_by_id_in_pages(client: TestClient) -> None:
    first = client.get("/sessions", params={"prefix": "user-", "limit": 25})
    assert first.status_code == 200
    assert sessions_on(first.text) == PAGED[:25]
    assert 'rel="next"' in first.text and 'rel="prev"' not in first.text
    last = client.get("/sessions", params={"prefix": "user-", "limit": 25, "page": 3})
    assert sessions_on(last.text) == PAGED[50:]
    assert 'rel="next"' not in last.text and 'rel="prev"' in last.text


def test_a_page_past_the_end_says_there_is_nothing(client: TestClient) -> None:
    response = client.get("/sessions", params={"prefix": "user-", "page": 99})
    assert response.status_code == 200
    assert sessions_on(response.text) == []
    assert "No sessions whose id starts with “user-” on page 99." in response.text


def test_an_exactly_full_last_page_offers_no_next(client: TestClient) -> None:
    response = client.get("/sessions", params={"prefix": "user-", "limit": 60})
    assert len(sessions_on(response.text)) == 60 and 'rel="next"' not in response.text


def test_a_prefix_is_literal_text(client: TestClient) -> None:
    assert sessions_on(client.get("/sessions", params={"prefix": "user-05"}).text) == [
        f"user-05{n}" for n in range(10)]
    assert sessions_on(client.get("/sessions", params={"prefix": "user-%"}).text) == []


def test_sessions_sorted_by_last_update_newest_first(client: TestClient) -> None:
    shown = sessions_on(client.get("/sessions", params={"sort": "updated", "limit": 500}).text)
    assert shown.index("expiring") < shown.index("ada") < shown.index("user-060")
    assert "Sorted by last update among" not in client.get("/sessions?sort=updated").text


def test_sorting_by_update_says_when_it_looked_at_part_of_the_namespace(
        client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(listing, "SORT_WINDOW", 10)
    response = client.get("/sessions", params={"sort": "updated", "prefix": "user-"})
    assert len(sessions_on(response.text)) == 10
    assert "among the first 10 sessions whose id matches" in response.text


@pytest.mark.parametrize(("query", "reason"), [
    ("page=x", "page must be a whole number, got &#39;x&#39;"),
    ("page=0", "page must be at least 1, got 0"),
    ("limit=0", "limit must be at least 1 and at most 500, got 0"),
    ("limit=501", "limit must be at least 1 and at most 500, got 501"),
    ("sort=size", "sort must be one of id, updated, got &#39;size&#39;"),
    ("prefix=a%00b", "prefix &#39;a\\x00b&#39; contains a NUL character"),
])
def test_a_bad_query_parameter_is_a_400_that_says_why(client: TestClient, query: str,
                                                     reason: str) -> None:
    response = client.get(f"/sessions?{query}")
    assert response.status_code == 400
    assert reason in response.text
    assert "Traceback" not in response.text


def test_a_conversation_shows_roles_seqs_tool_links_and_folded_metadata(
        client: TestClient) -> None:
    page = client.get("/session", params={"id": "ada"}).text
    assert re.findall(r'<span class="role">(\w+)', page) == [
        "system", "user", "assistant", "tool", "assistant", "user"]
    assert [f"seq {n}" in page for n in range(1, 7)] == [True] * 6
    call = re.search(r'class="call" id="(call-\w+)".*?href="#(result-\w+)"', page, re.S)
    assert call is not None
    assert f'id="{call[2]}"' in page and f'href="#{call[1]}"' in page
    assert "<details class=\"metadata\"><summary>metadata</summary>" in page
    assert "&#34;tokens&#34;: 42" in page
    assert "TTL left</dt><dd>never" in page and "ledger id" in page


def test_what_a_user_typed_is_shown_as_text(client: TestClient) -> None:
    response = client.get("/session", params={"id": "ada"})
    assert "<script>" not in response.text.split("<main>")[1]
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in response.text
    assert HOSTILE not in response.text
    assert "script-src" not in response.headers["content-security-policy"]
    assert response.headers["content-security-policy"].startswith("default-src 'none'")


def test_content_blocks_other_than_text_are_folded_json(client: TestClient) -> None:
    page = client.get("/session", params={"id": "blocks"}).text
    assert '<pre class="content">Look at this: my receipt</pre>' in page
    assert "<summary>content blocks</summary>" in page
    assert "https://example.com/&lt;receipt&gt;.png" in page and "4 bytes of data" in page


def test_a_session_that_went_after_it_was_listed_is_left_out(store_url: str) -> None:
    async def rows() -> list[listing.Row]:
        async with await open_async_store(store_url, namespace=NAMESPACE) as store:
            return await listing._rows(store, ["ada", "gone-meanwhile"])

    assert [row.id for row in asyncio.run(rows())] == ["ada"]


def test_control_and_bidi_characters_are_shown_as_escapes(client: TestClient) -> None:
    page = client.get("/session", params={"id": "trojan"}).text
    assert "refund \\u202eDENIED\\u202c now\\x1b[2J" in page  # the tab expanded
    assert "\u202e" not in page and "\x1b" not in page


def test_a_session_with_a_ttl_shows_the_time_left(client: TestClient) -> None:
    page = client.get("/session", params={"id": "expiring"}).text
    left = re.search(r"TTL left</dt><dd>(\S+) (\S+) \(expires", page)
    assert left is not None and left[1] in ("59m", "1h"), page


def test_a_long_conversation_is_read_a_window_at_a_time(client: TestClient) -> None:
    newest = client.get("/session", params={"id": "ada", "limit": 2}).text
    assert re.findall(r"<span>seq (\d+)</span>", newest) == ["5", "6"]
    assert 'after=2&amp;limit=2">← older' in newest and "newer →" not in newest
    middle = client.get("/session", params={"id": "ada", "limit": 2, "after": 2}).text
    assert re.findall(r"<span>seq (\d+)</span>", middle) == ["3", "4"]
    assert 'after=4&amp;limit=2">newer' in middle and 'after=0&amp;limit=2">← older' in middle
    oldest = client.get("/session", params={"id": "ada", "limit": 2, "after": 0}).text
    assert "← older" not in oldest
    assert "result of tool call call_1 (not on this page)" in client.get(
        "/session", params={"id": "ada", "limit": 3}).text
    assert "no result on this page" in client.get(
        "/session", params={"id": "ada", "limit": 1, "after": 2}).text
    beyond = client.get("/session", params={"id": "ada", "after": 50}).text
    assert "No messages in this window." in beyond


def test_an_unknown_session_is_a_404(client: TestClient) -> None:
    response = client.get("/session", params={"id": "nobody"})
    assert response.status_code == 404
    assert "no session &#39;nobody&#39; in namespace &#39;support-bot&#39;" in response.text


def test_a_session_page_needs_an_id(client: TestClient) -> None:
    response = client.get("/session")
    assert response.status_code == 400 and "id is required" in response.text


def test_an_unknown_route_is_a_404(client: TestClient) -> None:
    assert client.get("/admin").status_code == 404


def test_langgraph_threads_are_listed_and_linked_from_their_sessions(
        client: TestClient) -> None:
    threads = client.get("/threads").text
    assert re.findall(r'class="thread" href="/thread\?id=([^"]*)"', threads) == [
        CHAT_THREAD, THREAD]
    sessions = client.get("/sessions", params={"prefix": "lg:"}).text
    assert f'href="/thread?id={THREAD}">LangGraph thread' in sessions
    assert "No LangGraph threads on page 2." in client.get("/threads?page=2").text
    assert 'rel="next"' not in threads and 'rel="prev"' in client.get("/threads?page=2").text


def test_a_thread_is_a_timeline_of_checkpoints_with_forks_and_pending_writes(
        client: TestClient) -> None:
    page = client.get("/thread", params={"id": THREAD}).text
    ids = re.findall(r'class="checkpoint(?: branch)?" id="cp-([^"]+)"', page)
    parents = re.findall(r'class="parent" href="#cp-([^"]+)"', page)
    assert len(ids) == 7 and set(parents) <= set(ids)
    assert ids == sorted(ids)  # oldest first: LangGraph's checkpoint ids sort by time
    assert "fork: 2 children" in page
    assert "pending writes (1)" in page and "&lt;b&gt;pending&lt;/b&gt;" in page
    assert "forked here" in page and "no parent (the first)" in page
    assert "holds no list of messages" in page


def test_the_other_branch_of_a_fork_is_marked_and_the_latest_line_is_not(
        client: TestClient) -> None:
    """The second run continued the first; the fork from the first run's end is the
    latest line, so the second run's steps are the other branch."""
    page = client.get("/thread", params={"id": THREAD}).text
    kinds = re.findall(r'class="checkpoint( branch)?" id="cp-', page)
    assert kinds.count(" branch") == 3  # the second run: input, then its step and end
    assert page.count("other branch (not on the latest line)") == 3
    assert page.count("<b>latest</b>") == 1


def test_a_thread_reads_as_the_conversation_its_latest_state_holds(
        client: TestClient) -> None:
    page = client.get("/thread", params={"id": CHAT_THREAD}).text
    conversation = page.split("<h2>Conversation</h2>", 1)[1].split("<h2>Steps", 1)[0]
    roles = re.findall(r'<span class="role">(\w+)', conversation)
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert "Where is &lt;order&gt; 123?" in conversation
    assert "Order 123 has shipped \U0001f69a." in conversation
    assert 'class="answers"' in conversation and "<b>lookup_order</b>" in conversation
    assert "The latest state's <span class=\"mono\">messages</span>: 4 message(s)" in page
    # The steps' values are JSON with the messages' fields, not Python reprs.
    assert "HumanMessage(" not in page and '&#34;type&#34;: &#34;human&#34;' in page


def test_a_long_thread_shows_its_newest_checkpoints_and_says_so(
        client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "CHECKPOINT_LIMIT", 3)
    page = client.get("/thread", params={"id": THREAD}).text
    assert len(re.findall(r'class="checkpoint(?: branch)?" id=', page)) == 3
    assert "3 checkpoint(s) (the newest 3 only) in 1 namespace(s)" in page


def test_without_the_langgraph_extra_a_thread_page_says_what_to_install(
        client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "chatledger.langgraph", None)  # as if not installed
    response = client.get("/thread", params={"id": THREAD})
    assert response.status_code == 501
    assert "pip install -e &#34;.[langgraph]&#34; in a chatledger checkout" in response.text


def test_an_unknown_thread_is_a_404(client: TestClient) -> None:
    response = client.get("/thread", params={"id": "no-such-thread"})
    assert response.status_code == 404 and "no LangGraph thread" in response.text


def test_the_health_panel_shows_doctors_findings(client: TestClient) -> None:
    page = client.get("/health").text
    assert re.search(r'class="status ok">ok</td><td>journal', page)
    assert "0 error(s)" in page


def test_live_metrics_count_the_inspectors_own_calls(client: TestClient) -> None:
    client.get("/session", params={"id": "ada"})
    page = client.get("/live").text
    assert re.search(r"<td>read</td><td>ok</td><td class=\"num\">[1-9]", page)
    assert "chatledger_memory_lost_total</td><td class=\"num\">0" in page


def test_metrics_are_prometheus_text(client: TestClient) -> None:
    client.get("/session", params={"id": "ada"})
    response = client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert re.search(r'chatledger_operation_duration_seconds_count\{db_system="sqlite",'
                     r'namespace="support-bot",operation="info",outcome="ok"\} [1-9]',
                     response.text)


ROUTES = ["/", "/sessions", "/session?id=ada", "/threads", f"/thread?id={THREAD}",
          "/health", "/live", "/metrics"]


def test_nothing_is_ever_written(client: TestClient, store_url: str) -> None:
    with open_store(store_url, namespace=NAMESPACE) as store:
        before = {sid: store.session(sid).info() for sid in store.sessions()}
    for route in ROUTES:
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            response = client.request(method, route)
            assert response.status_code == 405, (method, route)
            assert "GET" in response.headers["allow"]
        assert client.get(route).status_code == 200
    with open_store(store_url, namespace=NAMESPACE) as store:
        assert {sid: store.session(sid).info() for sid in store.sessions()} == before
    written = re.findall(r'operation="(append|trim|delete|purge)"', client.get("/metrics").text)
    assert written == []
