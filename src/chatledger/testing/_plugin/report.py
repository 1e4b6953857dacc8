"""A failed test's report that starts with what ``ledger_probe`` saw."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ProbeFirst"]

_TITLE = "chatledger probe"


@dataclass(frozen=True)
class ProbeFirst:
    """The probe's summary, then pytest's own report of the failure.

    The summary leads because the traceback under it may run through many
    frames of chatledger and of the code under test, and the summary (which
    calls failed, how often they were retried) is what explains it.
    """

    summary: str
    original: Any  # what pytest made of the failure: a TerminalRepr, or a string

    @property
    def reprcrash(self) -> Any:
        """The crash line that ``-ra`` and ``--tb=line`` show: the original's."""
        return getattr(self.original, "reprcrash", None)

    def toterminal(self, out: Any) -> None:  # out: pytest's TerminalWriter (not public)
        out.sep("-", _TITLE)
        for line in self.summary.splitlines():
            out.line(line)
        out.sep("-")
        if hasattr(self.original, "toterminal"):
            self.original.toterminal(out)
        else:
            out.line(str(self.original))

    def __str__(self) -> str:
        # pytest-xdist sends a report without a traceback object as this text.
        return f"{_TITLE}:\n{self.summary}\n\n{self.original}"
