"""Text as an operator reads it, in the CLI and the inspector alike: durations,
and stored text with its controls shown as escapes."""

from __future__ import annotations

import unicodedata

__all__ = ["BIDI", "duration", "escape", "escape_line"]

# Characters that reorder or hide the text around them (the "Trojan Source"
# controls): shown as escapes, so what an operator reads is what is stored.
BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def duration(seconds: float | None) -> str:
    """``2d 3h``, ``5m 10s``: the two largest units; ``never`` for no expiry, ``0s`` for
    none left (an expiry already past)."""
    if seconds is None:
        return "never"
    days, rest = divmod(max(0, int(seconds)), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{n}{unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "m"),
                                          (secs, "s")) if n]
    return " ".join(parts[:2]) or "0s"


def escape(text: str) -> str:
    """``text`` with control and bidi characters written as escapes; newlines kept."""
    return "".join(_escaped(char) for char in text.expandtabs(4))


def escape_line(text: str) -> str:
    """``text`` as one line: every control and bidi character written as an escape, a
    newline too (an id, a name: a newline in one would draw a line that is not there)."""
    return "".join(_escaped(char, newline=False) for char in text)


def _escaped(char: str, *, newline: bool = True) -> str:
    if (char == "\n" and newline) or (char not in BIDI and unicodedata.category(char) != "Cc"):
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
