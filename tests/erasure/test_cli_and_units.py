"""``chatledger forget-user``, and the parts of erasure that need no backend."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from chatledger import ConfigError, ForgetReport, open_async_store, open_store, user
from chatledger._backends._sync.base import Backend
from chatledger._backends.contract import Batch
from chatledger._backends.sqlite.backend import SQLiteBackend
from chatledger._cli import main
from chatledger._erasure import thread_of


def run(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=stdin)


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/users.db"
    with open_store(url) as store:
        for sid in ("a1", "a2", "lg:3:t-1", "lg:3:t-1:"):
            store.session(sid, user="alice").append([user("alice's words")])
        store.session("b1", user="bob").append([user("bob's words")])
        store.session("u").append([user("nobody's")])
    return url


def _ids(url: str) -> list[str]:
    with open_store(url) as store:
        return sorted(store.sessions())


def test_forget_user_shows_asks_and_deletes(url: str) -> None:
    dry = run("forget-user", "alice", "--dry-run", "--url", url)
    assert dry.exit_code == 0, dry.output
    assert "would delete 4 session(s), 1 LangGraph thread(s)" in dry.stdout
    assert "  lg:3:t-1:\n" in dry.stdout and _ids(url) == ["a1", "a2", "b1", "lg:3:t-1",
                                                          "lg:3:t-1:", "u"]
    declined = run("forget-user", "alice", "--url", url, stdin="n\n")
    assert declined.exit_code == 1 and "nothing deleted" in declined.output
    done = run("forget-user", "alice", "--url", url, stdin="y\n")
    assert done.exit_code == 0 and "deleted 4 session(s), 1 LangGraph thread(s)" in done.stdout
    assert _ids(url) == ["b1", "u"]
    again = run("forget-user", "alice", "--url", url, "--yes")
    assert again.exit_code == 0 and "nothing to delete" in again.stdout


def test_forget_user_lists_the_first_ten_and_counts_the_gone(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/many.db"
    with open_store(url, ttl=60, clock=lambda: 1000.0) as store:  # long expired
        for n in range(13):
            store.session(f"s{n:02}", user="carol").append([user("x")])
    with open_store(url) as store:
        store.session("fresh", user="carol").append([user("x")])
    result = run("forget-user", "carol", "--url", url, "--yes")
    assert result.exit_code == 0, result.output
    assert "deleted 1 session(s)\n  fresh\n" in result.stdout
    assert "13 indexed session(s) already gone" in result.stdout
    many = f"sqlite:///{tmp_path}/more.db"
    with open_store(many) as store:
        for n in range(12):
            store.session(f"s{n:02}", user="dan").append([user("x")])
    listed = run("forget-user", "dan", "--url", many, "--dry-run")
    assert "  s09\n  ... and 2 more\n" in listed.stdout


def test_a_session_recreated_through_every_round_exits_1(url: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A writer that recreates the session after each delete: reported, exit 1."""
    real = SQLiteBackend.forget_session

    def forget_then_rewritten(self: SQLiteBackend, who: str, session: str) -> bool:
        deleted = real(self, who, session)
        if session == "a1":
            self.append(session, Batch(["again"], [b'{"role":"user","content":"again"}'],
                                       user=who))
        return deleted

    monkeypatch.setattr(SQLiteBackend, "forget_session", forget_then_rewritten)
    result = run("forget-user", "alice", "--url", url, "--yes")
    assert result.exit_code == 1
    assert "1 session(s) of 'alice' were written again during the erasure" in result.output
    with open_store(url) as store:
        assert store._backend.user_sessions("alice") == ["a1"]  # still indexed


def test_a_backend_without_a_user_index_says_so() -> None:
    with open_store("memory://") as store:
        with pytest.raises(ConfigError, match="keeps no user index"):
            Backend.user_sessions(store._backend, "alice")
        with pytest.raises(ConfigError, match="keeps no user index"):
            Backend.forget_session(store._backend, "alice", "s")
        store._backend.supports_users = False
        with pytest.raises(ConfigError, match="not available on this backend"):
            store.session("s", user="alice")
        with pytest.raises(ConfigError, match="not available on this backend"):
            store.forget_user("alice")
        with pytest.raises(ValueError, match="user id must not be empty"):
            store.forget_user("")


def _run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_the_async_store_forgets_on_sqlite(tmp_path: Path) -> None:
    async def scenario() -> ForgetReport:
        store = await open_async_store(f"sqlite:///{tmp_path}/a.db")
        async with store:
            await store.session("s", user="erin").append([user("x")])
            return await store.forget_user("erin")

    assert _run(scenario()).deleted == ("s",)


@pytest.mark.parametrize(("session", "thread"), [
    ("lg:3:t-1", "t-1"), ("lg:3:t-1:", "t-1"), ("lg:3:t-1:sub", "t-1"), ("lg:4:a:bc:", "a:bc"),
    ("chat", None), ("lg:", None), ("lg:x:abc", None), ("lg:5:abc", None), ("lg:2:abc", None),
    ("lg:0:", None),
])
def test_thread_of_reads_the_savers_layout(session: str, thread: str | None) -> None:
    assert thread_of(session) == thread


def test_the_report_counts() -> None:
    report = ForgetReport(user="u", deleted=("a", "b"), threads=("t",), still_written=("a",))
    assert (report.sessions_deleted, report.threads_deleted, report.complete) == (2, 1, False)


@pytest.mark.parametrize(("namespace", "owner"), [("ns", "alice"), ("a:b", "c:d"), ("n", "{x}")])
def test_the_user_index_key_is_no_session_key(namespace: str, owner: str) -> None:
    """Its hash tag holds two unescaped colons (a session's holds one), so no
    session pattern takes it, and it stays inside the namespace's ACL pattern."""
    from chatledger._backends.redis.keys import meta_pattern, session_of, user_index_key
    from chatledger._backends.redis.permissions import acl_rules

    key = user_index_key(namespace, owner)
    tag = key[key.index(b"{") + 1: key.index(b"}")]
    assert tag.count(b":") == 2
    assert session_of(key, namespace, "", every_key=True) is None
    assert session_of(key, namespace, "") is None
    pattern = acl_rules(namespace).split()[1][1:]  # ~pattern
    assert pattern.encode() == meta_pattern(namespace, "", every_key=True)
    prefix = pattern.split("*")[0].replace("\\", "")
    assert key.decode().startswith(prefix) and key.endswith(b"}:sessions")
