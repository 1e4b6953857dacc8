"""Export piped into import, with both keys, moves sessions onto the new key in
a fresh namespace (rotate-key re-seals them in place instead)."""

from __future__ import annotations

import base64
from pathlib import Path

from click.testing import CliRunner

from chatledger import Keyring, open_store, user
from chatledger._cli import main
from chatledger._core import make_query

OLD, NEW = Keyring.new_key(), Keyring.new_key()


def test_export_then_import_with_both_keys_reseals_with_the_new_one(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/a.db"
    with open_store(url, namespace="bot", encryption=Keyring({"old": OLD}, current="old")) as s:
        s.session("u1").append([user("hello"), user("card 4111")])
    both = f"new={base64.b64encode(NEW).decode()},old={base64.b64encode(OLD).decode()}"
    env = {"CHATLEDGER_KEYRING": both}
    exported = CliRunner().invoke(main, ["export", "--url", url, "--namespace", "bot"], env=env)
    assert exported.exit_code == 0, exported.output
    imported = CliRunner().invoke(main, ["import", "-", "--url", url, "--namespace", "bot-2"],
                                  input=exported.stdout, env=env)
    assert imported.exit_code == 0, imported.output
    with open_store(url, namespace="bot-2",
                    encryption=Keyring({"new": NEW}, current="new")) as store:
        assert [m.text for m in store.session("u1").read().messages] == ["hello", "card 4111"]
        raw = store._backend.read("u1", make_query(None, None, None)).entries
        assert [bytes(blob)[:5] for _, blob in raw] == [b"\x03\x03new"] * 2
