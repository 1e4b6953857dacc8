"""A session whose stored entry is damaged in the SQLite file itself, for the tools that
show one (the inspector, ``chatledger show`` and ``export``): four messages, the second
of them damaged, and the words no user should see."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from chatledger import Keyring, assistant, open_store, user

OLD_KEY, NEW_KEY = Keyring({"old": b"o" * 32}, "old"), Keyring({"new": b"n" * 32}, "new")
INTERNALS = ("Traceback", "CorruptEntryError", "EncryptionKeyError", "KeyError", "orjson",
             "File \"")


def damage(path: Path, session: str, seq: int, body: Callable[[bytes], bytes]) -> None:
    """Rewrite the stored bytes of one entry, as a disk or a hand at the database would."""
    with sqlite3.connect(path) as db:
        (stored,) = db.execute("SELECT body FROM entries WHERE sid = ? AND seq = ?",
                               (session, seq)).fetchone()
        db.execute("UPDATE entries SET body = ? WHERE sid = ? AND seq = ?",
                   (body(stored), session, seq))
    db.close()


def plain(path: Path) -> None:
    """Four messages in the clear; the second carries data (stored with a length head)."""
    with open_store(f"sqlite:///{path}") as store:
        store.session("broken").append([
            user("first, readable"), assistant("second", data=b"\x00" * 64),
            user("third, readable"), assistant("fourth, readable")])
