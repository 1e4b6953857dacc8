"""delete and purge: say what will go, ask, touch nothing outside the namespace."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from chatledger import open_store, user
from chatledger._cli import main


def run(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=stdin)


def _ids(url: str, namespace: str) -> list[str]:
    with open_store(url, namespace=namespace) as store:
        return sorted(store.sessions())


@pytest.fixture
def url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path}/ops.db"
    with open_store(url) as store:
        for sid in ("a*1", "a*2", "ab", "b"):
            store.session(sid).append([user("x"), user("y")])
    return url


def test_delete_shows_what_goes_asks_and_deletes(url: str) -> None:
    declined = run("delete", "a*1", "b", "--url", url, stdin="n\n")
    assert declined.exit_code == 1 and "nothing deleted" in declined.output
    assert "a*1: 2 messages, version 2, updated " in declined.output
    assert _ids(url, "default") == ["a*1", "a*2", "ab", "b"]
    done = run("delete", "a*1", "b", "--url", url, stdin="y\n")
    assert done.exit_code == 0 and "deleted 2 session(s)" in done.stdout
    assert _ids(url, "default") == ["a*2", "ab"]


def test_delete_dry_run_and_yes(url: str) -> None:
    dry = run("delete", "ab", "--dry-run", "--url", url)
    assert dry.exit_code == 0 and "dry run: would delete 1 session(s)" in dry.stdout
    assert "ab" in _ids(url, "default")
    assert run("delete", "ab", "--yes", "--url", url).exit_code == 0
    assert "ab" not in _ids(url, "default")


def test_deleting_a_missing_session_deletes_nothing(url: str) -> None:
    result = run("delete", "ab", "nope", "--yes", "--url", url)
    assert result.exit_code == 1 and "no session 'nope'" in result.output
    assert "ab" in _ids(url, "default")


def test_purge_dry_run_lists_what_would_go(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from chatledger._cli import operate

    monkeypatch.setattr(operate, "SHOWN", 1)
    dry = run("purge", "--prefix", "a*", "--dry-run", "--url", url)
    assert dry.exit_code == 0
    assert "would delete session(s) whose id starts with 'a*'" in dry.stdout
    assert "2 session(s)\n  a*1\n  ... and 1 more" in dry.stdout
    assert len(_ids(url, "default")) == 4


@pytest.mark.parametrize(("args", "error"), [
    (["--prefix", "a", "--all"], "give --prefix or --all, not both"),
    ([], "give a non-empty --prefix, or --all"),
    (["--prefix", ""], "give a non-empty --prefix, or --all"),
])
def test_purge_usage(url: str, args: list[str], error: str) -> None:
    result = run("purge", *args, "--yes", "--url", url)
    assert result.exit_code == 2 and error in result.output
    assert len(_ids(url, "default")) == 4


def test_purge_on_redis_never_touches_another_namespace(redis_url: str) -> None:
    mine, theirs = f"ops-{uuid.uuid4().hex[:8]}", f"other-{uuid.uuid4().hex[:8]}"
    for namespace in (mine, theirs):
        with open_store(redis_url, namespace=namespace) as store:
            for sid in ("a*1", "a*2", "ab"):
                store.session(sid).append([user("x")])
    result = run("purge", "--prefix", "a*", "--yes", "--url", redis_url, "--namespace", mine)
    assert result.exit_code == 0 and "deleted 2 session(s)" in result.stdout
    assert _ids(redis_url, mine) == ["ab"]
    assert _ids(redis_url, theirs) == ["a*1", "a*2", "ab"]
    everything = run("purge", "--all", "--yes", "--url", f"{redis_url}?namespace={mine}")
    assert everything.exit_code == 0 and _ids(redis_url, mine) == []
    assert _ids(redis_url, theirs) == ["a*1", "a*2", "ab"]
