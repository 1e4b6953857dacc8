"""Least privilege: the store works under exactly the ACL the Security page
gives, and doctor names a permission that is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from chatledger import BackendError, Keyring, open_store, user
from chatledger._backends.redis.permissions import (
    ACL_COMMANDS,
    acl_rules,
    can_probe,
    permission_check,
)
from chatledger._cli import main
from chatledger.testing import RedisServer

DOCS = Path(__file__).parents[2] / "docs" / "security.md"


def acl_user(rules: str) -> RedisServer:
    return RedisServer(extra_args=["--user", "bot", "on", ">pw", *rules.split()])


def doctor(url: str, namespace: str = "bot") -> tuple[int, str]:
    result = CliRunner().invoke(main, ["doctor", "--url", url, "--namespace", namespace])
    return result.exit_code, result.output


def test_the_store_works_under_exactly_the_documented_acl() -> None:
    with acl_user(acl_rules("bot")) as server:
        url = f"redis://bot:pw@127.0.0.1:{server.port}/0"
        with open_store(url, namespace="bot", ttl=3600) as store:
            session = store.session("s")
            session.append([user("a"), user("b")])
            assert session.append([user("a")], expect_version=2).version == 3
            assert [m.text for m in session.read(last=2).messages] == ["b", "a"]
            info = session.info()
            assert info is not None and info.version == 3
            assert session.trim(keep_last=1) == 2
            assert list(store.sessions()) == ["s"]
        keyring = Keyring({"k": Keyring.new_key()}, current="k")
        with open_store(url, namespace="bot", encryption=keyring) as store:  # rotate-key: LSET
            assert store.rotate_key().encrypted == 1
            session = store.session("s")
            assert [m.text for m in session.read().messages] == ["a"]
            assert session.delete() is True
            store.session("t").append([user("x")])
            assert store.purge() == 1
            store.session("u", user="ann").append([user("x")])
            assert store.forget_user("ann").deleted == ("u",)
        code, output = doctor(url)
        assert code == 0, output
        assert f"ok    permissions  every command chatledger sends is allowed " \
               f"({len(ACL_COMMANDS)} checked)" in output
        # Another namespace's keys are out of this user's reach, and doctor says so
        # when it first reaches the store.
        code, output = doctor(url, namespace="other")
        assert code == 2 and "no permissions to access one of the keys" in output


def test_doctor_names_a_missing_command_that_only_a_script_runs() -> None:
    with acl_user(acl_rules("bot").replace(" +rpush", "")) as server:
        url = f"redis://bot:pw@127.0.0.1:{server.port}/0"
        code, output = doctor(url)
        assert code == 1
        assert "FAIL  permissions  this user may not run rpush: add +rpush to its ACL" in output
        with open_store(url, namespace="bot") as store, pytest.raises(BackendError):
            store.session("s").append([user("a")])


def test_a_user_who_may_not_eval_is_told_so() -> None:
    with acl_user(acl_rules("bot").replace(" +eval ", " ")) as server:
        url = f"redis://bot:pw@127.0.0.1:{server.port}/0"
        code, output = doctor(url)
        assert code == 2 and "no permissions to run the 'eval' command" in output
        # The check itself, as the library's doctor sees it.
        with open_store(url, namespace="bot") as store:
            found = {check.name: check for check in store._backend.checks()}
        assert found["permissions"].status == "fail"
        assert "the permission probe was refused" in found["permissions"].detail
        assert "'eval'" in found["permissions"].detail


def test_the_security_page_gives_the_acl_this_code_checks() -> None:
    assert acl_rules("support-bot") in DOCS.read_text(encoding="utf-8")


def test_servers_before_redis_7_are_not_probed() -> None:
    assert not can_probe({"redis_version": "6.2.14"}) and not can_probe({})
    assert can_probe({"redis_version": "7.0.15"})
    assert permission_check(None).status == "info"
