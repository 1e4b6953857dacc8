"""What an SQLite file says about the safety of the sessions it holds."""

from __future__ import annotations

import os
import sqlite3

from . import Check


def file_checks(path: str) -> list[Check]:
    """Journal mode, integrity and size of the database file."""
    try:
        with sqlite3.connect(path) as db:
            mode = db.execute("PRAGMA journal_mode").fetchone()[0]
            integrity = db.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.Error as exc:
        return [Check("file", "fail", f"{path}: {exc}")]
    return [
        Check("journal", "ok" if mode == "wal" else "warn", f"journal_mode={mode}", mode),
        Check("integrity", "ok" if integrity == "ok" else "fail", f"quick_check: {integrity}",
              integrity),
        Check("file", "info", f"{os.path.abspath(path)}, {os.path.getsize(path):,} bytes; "
              "durable across restarts, local to this machine", os.path.getsize(path)),
    ]
