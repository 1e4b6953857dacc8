"""``chatledger doctor`` with a keyring: entries of the namespace stored in the clear."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from click.testing import CliRunner

import chatledger._doctor as doctor_module
from chatledger import BackendUnavailable, Keyring, open_store, user
from chatledger._cli import main
from chatledger._doctor import diagnose, plaintext

KEY = Keyring.new_key()
KEYRING = f"k={base64.b64encode(KEY).decode()}"


def doctor(url: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["doctor", url, "--namespace", "bot"],
                                env={"CHATLEDGER_KEYRING": KEYRING})
    return result.exit_code, result.output


def test_clear_entries_in_an_encrypted_namespace_fail_until_rotate_key_seals_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(plaintext, "PAGE", 2)  # several pages per session
    url = f"sqlite:///{tmp_path}/a.db"
    with open_store(url, namespace="bot") as plain:
        plain.session("u1").append([user(f"clear {i}") for i in range(5)])
    with open_store(url, namespace="bot", encryption=Keyring({"k": KEY}, current="k")) as sealed:
        sealed.session("u2").append([user("sealed")])
    code, output = doctor(url)
    assert code == 1, output
    assert ("FAIL  plaintext    5 entries of namespace 'bot' are stored in the clear "
            "(1 session(s): 'u1')") in output
    assert "every read of them is refused" in output
    window = diagnose(url, namespace="bot", allow_plaintext=True,
                      encryption=Keyring({"k": KEY}, current="k"))
    check = {c.name: c for c in window.checks}["plaintext"]
    assert (check.status, check.value) == ("warn", 5) and "migration window" in check.detail
    rotated = CliRunner().invoke(main, ["rotate-key", "--url", url, "--namespace", "bot"],
                                 env={"CHATLEDGER_KEYRING": KEYRING})
    assert rotated.exit_code == 0, rotated.output
    code, output = doctor(url)
    assert code == 0 and "ok    plaintext    every entry of namespace 'bot' is sealed" in output


def test_a_scan_the_store_cuts_short_is_a_failed_check_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def unavailable(store: object) -> None:
        raise BackendUnavailable("the server went away mid-scan")

    monkeypatch.setattr(doctor_module, "clear_entries", unavailable)
    report = diagnose(f"sqlite:///{tmp_path}/a.db", namespace="bot",
                      encryption=Keyring({"k": KEY}, current="k"))
    check = {c.name: c for c in report.checks}["plaintext"]
    assert check.status == "fail" and "went away mid-scan" in check.detail
