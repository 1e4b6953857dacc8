"""The error of a file that ``import_sessions`` refuses before writing anything."""

from __future__ import annotations

from .._errors import ChatLedgerError


class BadRecord(ChatLedgerError):
    """A line of an export file that an import would not store: nothing was imported.

    ``line`` is its number in the file (from 1); ``field`` the offending field of
    the record when one is to blame (``seq``, ``metadata.n``, ``tool_calls[0].args``),
    else None; ``reason`` says what is wrong. The message is ``line N: ...``.
    """

    def __init__(self, line: int, reason: str, field: str | None = None) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason
        self.field = field
