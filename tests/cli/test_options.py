"""--url and --namespace before the command, after it, or from the environment."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from chatledger import open_store, user
from chatledger._cli import main

NS = "ns"


@pytest.fixture(autouse=True)
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No target from the machine running the tests: the default URL names no file here."""
    monkeypatch.delenv("CHATLEDGER_URL", raising=False)
    monkeypatch.delenv("CHATLEDGER_NAMESPACE", raising=False)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")


@pytest.fixture
def url(tmp_path: Path) -> str:
    """A database whose one session, 's', is in namespace 'ns' (none in 'default')."""
    url = f"sqlite:///{tmp_path}/cli.db"
    with open_store(url, namespace=NS) as store:
        store.session("s").append([user("hello")])
    return url


def listed(result: Result) -> list[str]:
    """The session ids that ``sessions --json`` printed."""
    return [row["session"] for row in json.loads(result.stdout)["sessions"]]


def _session_ids(url: str) -> list[str]:
    with open_store(url, namespace=NS) as store:
        return list(store.sessions())


def _version(url: str, session: str) -> int:
    with open_store(url, namespace=NS) as store:
        return store.session(session).read().version


# Each command, and what it does when it works on 'ns' at the test's database.
COMMANDS: dict[str, tuple[list[str], Callable[[Result, str], bool]]] = {
    "sessions": (["sessions", "--json"], lambda r, _: listed(r) == ["s"]),
    "show": (["show", "s"], lambda r, _: "hello" in r.output),
    "export": (["export"], lambda r, _: json.loads(r.stdout)["session"] == "s"),
    "purge": (["purge", "--all", "--yes"],
              lambda r, url: "deleted 1 session(s)" in r.output and _session_ids(url) == []),
    "doctor": (["doctor", "--json"],
               lambda r, url: json.loads(r.output)["url"] == url and json.loads(r.output)["ok"]),
    "demo": (["demo", "--session", "d"], lambda _, url: _version(url, "d") == 6),
    "demo-part": (["demo-part", "--session", "d", "--part", "1"],
                  lambda r, url: "VERSION 4" in r.output and _version(url, "d") == 4),
}


def _placed(where: str, command: list[str], url: str) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that give ``url`` and 'ns' from ``where``."""
    target = ["--url", url, "--namespace", NS]
    return {
        "before": ([*target, *command], {}),
        "after": ([*command, *target], {}),
        "split": (["--url", url, *command, "--namespace", NS], {}),
        "env": (command, {"CHATLEDGER_URL": url, "CHATLEDGER_NAMESPACE": NS}),
    }[where]


@pytest.mark.parametrize("where", ["before", "after", "split", "env"])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_takes_the_target_before_or_after_its_name(
        name: str, where: str, url: str) -> None:
    command, worked = COMMANDS[name]
    args, env = _placed(where, command, url)
    result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 0, result.output
    assert worked(result, url), result.output


@pytest.mark.parametrize(("before", "env"), [
    (["--url", "sqlite:///nowhere.db", "--namespace", "default"], {}),
    ([], {"CHATLEDGER_URL": "sqlite:///nowhere.db", "CHATLEDGER_NAMESPACE": "default"}),
])
def test_the_value_after_the_command_wins(url: str, before: list[str],
                                          env: dict[str, str]) -> None:
    args = [*before, "sessions", "--json", "--url", url, "--namespace", NS]
    assert listed(CliRunner().invoke(main, args, env=env)) == ["s"]


def test_a_value_after_the_command_replaces_only_its_own_option(url: str) -> None:
    # The group's namespace still applies under the command's URL, and the reverse.
    other = url.replace("cli.db", "other.db")
    open_store(other).close()
    only_url = CliRunner().invoke(main, ["--url", other, "--namespace", NS,
                                         "sessions", "--json", "--url", url])
    assert listed(only_url) == ["s"]
    only_namespace = CliRunner().invoke(main, ["--url", url, "sessions", "--json",
                                               "--namespace", NS])
    assert listed(only_namespace) == ["s"]
    neither = CliRunner().invoke(main, ["--url", url, "--namespace", NS, "sessions", "--json",
                                        "--namespace", "default"])
    assert neither.exit_code == 0 and listed(neither) == []


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_namespace_unlike_the_urls_is_a_usage_error_wherever_it_comes_from(
        name: str, url: str) -> None:
    command = COMMANDS[name][0]
    in_url = f"{url}?namespace={NS}"
    for args in ([*command, "--url", in_url, "--namespace", "cats"],
                 ["--namespace", "cats", *command, "--url", in_url],
                 ["--url", in_url, *command, "--namespace", "cats"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, (args, result.output)
        assert f"the URL says namespace {NS!r}, --namespace" in result.output
    assert _session_ids(url) == ["s"]  # nothing ran: purge deleted nothing
    same = CliRunner().invoke(main, [*command, "--url", in_url, "--namespace", NS])
    assert same.exit_code == 0, same.output


def test_a_url_after_the_command_replaces_the_urls_namespace_too(url: str) -> None:
    args = ["--url", f"{url}?namespace=cats", "sessions", "--json",
            "--url", f"{url}?namespace={NS}"]
    assert listed(CliRunner().invoke(main, args)) == ["s"]


@pytest.mark.parametrize("command", [["sessions"], ["show", "s"], ["export"],
                                     ["purge", "--all", "--yes"], ["doctor"]])
def test_commands_on_existing_sessions_never_create_a_database(
        tmp_path: Path, command: list[str]) -> None:
    typo = f"sqlite:///{tmp_path}/typo.db"
    result = CliRunner().invoke(main, [*command, "--url", typo])
    assert result.exit_code == 2  # a URL that names nothing: the command could not run
    assert "no SQLite database at" in result.output
    assert not (tmp_path / "typo.db").exists()


def test_the_demo_announces_the_namespace_the_url_names(url: str) -> None:
    result = CliRunner().invoke(main, ["demo", "--session", "d", "--url", f"{url}?namespace={NS}"])
    assert result.exit_code == 0, result.output
    assert f"(namespace {NS!r}), session d" in result.output
    assert _version(url, "d") == 6


def test_doctors_url_argument_wins_over_url_options(url: str, tmp_path: Path) -> None:
    typo = f"sqlite:///{tmp_path}/typo.db"
    result = CliRunner().invoke(main, ["--url", typo, "doctor", url, "--url", typo, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["url"] == url
