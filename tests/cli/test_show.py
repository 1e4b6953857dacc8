"""show and sessions as people read them, and as machines do (--json)."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from chatledger import assistant, open_async_store, open_store, tool, user
from chatledger._cli import main
from chatledger._cli.render import SHORT_CHARS


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/show.db"


def run(*args: str, **env: str) -> Result:
    return CliRunner().invoke(main, list(args), env=env or None)


def test_controls_and_bidi_characters_are_shown_as_escapes(url: str) -> None:
    with open_store(url) as store:
        store.session("s").append([user("pay \u202eevil\u2066 now\x1b[2J\r\x07 😀\u200d👍")])
    out = run("show", "s", "--url", url).stdout
    assert "pay \\u202eevil\\u2066 now\\x1b[2J\\x0d\\x07 😀\u200d👍" in out
    assert "\u202e" not in out and "\x1b" not in out


def test_a_newline_in_an_id_or_a_name_is_an_escape_not_a_line(url: str) -> None:
    """A message's text keeps its lines; an id drawn as two lines would show a row that is
    not there (a session id crafted to look like another customer's)."""
    forged = "zz\nprod-customer-42   9   9"
    with open_store(url) as store:
        store.session(forged).append([assistant("a\nb", name="bot\nadmin", tool_calls=[
            {"id": "c\n1", "name": "f\ng", "args": {}}])])
    listed = run("sessions", "--url", url).stdout
    shown = run("show", forged, "--url", url).stdout
    assert "zz\\x0aprod-customer-42" in listed and "\nprod-customer-42" not in listed
    assert shown.splitlines()[0].startswith("session zz\\x0aprod-customer-42")
    assert "bot\\x0aadmin" in shown and "f\\x0ag" in shown and "[c\\x0a1]" in shown
    assert "a\n" in shown  # the text's own line break stays one
    purge = run("purge", "--prefix", "zz", "--dry-run", "--url", url).stdout
    assert "zz\\x0aprod-customer-42" in purge


def test_columns_stay_aligned_past_seq_9_and_continuation_lines_are_indented(url: str) -> None:
    with open_store(url) as store:
        store.session("s").append([user(f"m{i}") for i in range(11)] + [user("one\ntwo")])
    lines = run("show", "s", "--url", url).stdout.splitlines()[2:]
    assert lines[0].startswith(" 1  ") and lines[10].startswith("11  ")
    assert len({line.index("user") for line in lines[:12]}) == 1
    assert lines[-1].strip() == "two"
    assert lines[-1].index("two") == lines[-2].index("one")


def test_long_messages_are_cut_unless_full(url: str) -> None:
    with open_store(url) as store:
        store.session("s").append([user("x" * 2000),
                                   user("\n".join(f"line-{i}" for i in range(40)))])
    short = run("show", "s", "--url", url).stdout
    assert f"[{2000 - SHORT_CHARS:,} more characters; --full shows all]" in short
    assert "x" * SHORT_CHARS in short and "x" * (SHORT_CHARS + 1) not in short
    assert "line-11..." in short and "line-12" not in short  # 12 lines at most
    full = run("show", "s", "--url", url, "--full").stdout
    assert "x" * 2000 in full and "more characters" not in full and "line-39" in full


def test_content_blocks_tool_calls_names_and_metadata_are_shown(url: str) -> None:
    with open_store(url) as store:
        store.session("s").append([
            user([{"type": "text", "text": "see"}, {"type": "image_url", "url": "u"}, "plain"]),
            assistant("", tool_calls=[{"id": "c1", "name": "track", "args": {"n": 1}}],
                      name="agent-7", metadata={"tokens": 12}),
            tool("shipped", tool_call_id="c1"),
        ])
    out = run("show", "s", "--url", url).stdout
    assert 'see\n' in out and '[image_url block] {"type":"image_url","url":"u"}' in out
    assert '-> track({"n":1}) [c1]' in out
    assert "name: agent-7" in out and 'metadata: {"tokens":12}' in out
    assert "[result of c1] shipped" in out


def test_data_is_shown_by_its_size_never_decoded(url: str) -> None:
    payload = b"\x1b[2J secret \xff" * 100_000
    with open_store(url, max_message_bytes=4_000_000) as store:
        store.session("s").append([user("a file", data=payload), user("no data")])
    out = run("show", "s", "--url", url).stdout
    assert "a file" in out and "<1,300,000 bytes of data>" in out
    assert "secret" not in out and out.count("bytes of data") == 1
    shown = json.loads(run("show", "s", "--json", "--url", url).stdout)
    assert [m.get("data_bytes") for m in shown["messages"]] == [1_300_000, None]
    assert "secret" not in json.dumps(shown)


def test_last_n_and_the_state_in_json(url: str) -> None:
    with open_store(url, ttl=timedelta(days=2)) as store:
        store.session("s").append([user("a"), user("b"), user("c")])
    shown = json.loads(run("show", "s", "--last", "2", "--json", "--url", url).stdout)
    assert [m["seq"] for m in shown["messages"]] == [2, 3]
    assert shown["expires_at"] is not None and 0 < shown["expires_in_seconds"] <= 2 * 86400
    human = run("show", "s", "--last", "1", "--url", url).stdout
    assert "expires 20" in human and ("(in 1d 23h)" in human or "(in 2d)" in human)


def test_colour_on_a_terminal_and_none_in_a_pipe(url: str) -> None:
    with open_store(url) as store:
        store.session("s").append([user("hi")])
    assert "\x1b[" not in run("show", "s", "--url", url).stdout
    coloured = run("show", "s", "--url", url, FORCE_COLOR="1", TERM="xterm-256color")
    assert "\x1b[" in coloured.stdout


def test_show_of_a_missing_session_is_exit_1(url: str) -> None:
    open_store(url).close()
    result = run("show", "nobody", "--url", url)
    assert result.exit_code == 1 and "no session 'nobody'" in result.output


def _listed(result: Result) -> list[str]:
    return [row["session"] for row in json.loads(result.stdout)["sessions"]]


def test_sessions_pages_sorts_and_shows_each_state(url: str) -> None:
    with open_store(url, ttl=3600) as store:
        for sid in ("c", "a", "b"):  # updated in this order
            store.session(sid).append([user("x")] * 1 + [user(sid)])
        store.session("a").append([user("again")])  # a is now the latest
    by_id = run("sessions", "--json", "--limit", "2", "--url", url)
    assert _listed(by_id) == ["a", "b"]
    assert json.loads(by_id.stdout)["pages"] == 2
    assert "sessions 1-2 of 3" in run("sessions", "--limit", "2", "--url", url).stderr
    assert "next: --page 2" in run("sessions", "--limit", "2", "--url", url).stderr
    assert _listed(run("sessions", "--json", "--limit", "2", "--page", "2", "--url", url)) == ["c"]
    past = run("sessions", "--limit", "2", "--page", "99", "--url", url).stderr
    assert "page 99 of 2: no sessions (3 in namespace" in past
    recent = run("sessions", "--json", "--sort", "updated", "--url", url)
    assert _listed(recent) == ["a", "b", "c"]
    row = json.loads(recent.stdout)["sessions"][0]
    assert (row["count"], row["version"]) == (3, 3) and row["expires_in_seconds"] <= 3600
    table = run("sessions", "--url", url).stdout.splitlines()
    assert table[0].split() == ["session", "messages", "version", "updated", "expires", "in",
                                "kind"]
    assert table[1].split()[:3] == ["a", "3", "3"] and table[1].endswith(("59m 59s", "1h"))


@pytest.mark.parametrize("server", ["sqlite", "postgres"])
def test_an_empty_namespace_names_the_namespaces_the_store_holds(
        server: str, url: str, request: pytest.FixtureRequest) -> None:
    if server == "postgres":
        url = request.getfixturevalue("postgres_url")
    with open_store(url, namespace="support-bot") as store:
        store.session("user-42").append([user("hi")])
    with open_store(url, namespace="gone", ttl=1, clock=lambda: 0.0) as store:
        store.session("old").append([user("expired long ago")])
    result = run("sessions", "--url", url, "--namespace", "nobody-here")
    assert result.exit_code == 0, result.output
    hint = result.stderr.strip().splitlines()[-1]
    assert hint.startswith("no sessions in namespace 'nobody-here'; this store holds sessions in:")
    held = hint.split(": ", 1)[1].removesuffix(" (--namespace NAME)").split(", ")
    assert "support-bot" in held and "gone" not in held and "nobody-here" not in held


def test_a_store_with_no_sessions_at_all_says_so(url: str) -> None:
    open_store(url).close()
    hint = run("sessions", "--url", url).stderr.strip()
    assert hint == "no sessions in namespace 'default'; this store holds no sessions"


def test_a_backend_that_cannot_list_its_namespaces_asks_about_the_namespace(
        redis_url: str) -> None:
    result = run("sessions", "--url", redis_url, "--namespace", "nobody-here")
    assert result.exit_code == 0, result.output
    assert "no sessions in namespace 'nobody-here' at redis://" in result.stderr
    assert "is --namespace right?" in result.stderr


def test_an_empty_prefix_match_is_not_blamed_on_the_namespace(url: str) -> None:
    with open_store(url) as store:
        store.session("a").append([user("hi")])
    hint = run("sessions", "--url", url, "--prefix", "zz").stderr.strip()
    assert hint == "no sessions in namespace 'default' whose id starts with 'zz'"


def test_langgraph_sessions_are_marked_and_can_be_left_out(url: str) -> None:
    with open_store(url) as store:
        for sid in ("user-42", "lg:7:user-42", "lg:7:user-42:", "lgs/prefs/=theme"):
            store.session(sid).append([user("x")])
    table = run("sessions", "--url", url).stdout.splitlines()
    assert table[0].split()[-1] == "kind"
    kinds = {line.split()[0]: " ".join(line.split()[6:]) for line in table[1:]}  # never expires
    assert kinds == {"lg:7:user-42": "langgraph checkpoints",
                     "lg:7:user-42:": "langgraph checkpoints",
                     "lgs/prefs/=theme": "langgraph store", "user-42": ""}
    rows = json.loads(run("sessions", "--json", "--url", url).stdout)["sessions"]
    assert {row["session"]: row["kind"] for row in rows}["user-42"] is None
    assert _listed(run("sessions", "--json", "--no-langgraph", "--url", url)) == ["user-42"]
    only_langgraph = run("sessions", "--no-langgraph", "--prefix", "lg", "--url", url)
    assert only_langgraph.stderr.strip() == (
        "no sessions in namespace 'default' but LangGraph's (3 sessions left out;"
        " --langgraph lists them)")


def test_the_cli_knows_the_prefixes_langgraph_writes() -> None:
    from chatledger._cli.inspect import LANGGRAPH_KINDS
    from chatledger.langgraph._item_layout import ITEM_PREFIX
    from chatledger.langgraph._layout import ROOT_PREFIX, session_id

    assert set(LANGGRAPH_KINDS) == {ROOT_PREFIX, ITEM_PREFIX}
    assert session_id("user-42", "").startswith(ROOT_PREFIX)


@pytest.mark.parametrize(("url", "hint"), [
    ("redis:/localhost", "needs '//' after 'redis:'; did you mean 'redis://localhost'?"),
    ("sqlite:bot.db", "needs '//' after 'sqlite:'; did you mean 'sqlite:///bot.db'?"),
    ("postgress://h/db", "unknown store URL scheme 'postgress' in 'postgress://h/db'; "
                         "did you mean 'postgres'?"),
    ("reddis://h/0", "did you mean 'redis'?"),
])
def test_a_mistyped_url_gets_the_url_it_probably_meant(url: str, hint: str) -> None:
    result = run("sessions", "--url", url)
    assert result.exit_code == 2 and hint in result.stderr, result.output


@pytest.mark.parametrize("store_url", ["sqlite", "memory://namespaces-async"])
def test_async_stores_name_their_namespaces_too(store_url: str, url: str) -> None:
    """SQLite's async store runs the sync backend in a thread; memory's is native."""
    store_url = url if store_url == "sqlite" else store_url

    async def named() -> object:
        async with await open_async_store(store_url, namespace="support-bot") as store:
            await store.session("user-42").append([user("hi")])
            return await store._backend.namespaces()

    assert asyncio.run(named()) == ["support-bot"]
