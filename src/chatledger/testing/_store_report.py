"""What ``check_store`` found: one verdict per clause, with the reason.

No LangGraph import here: the report is plain data, readable without the extra.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ClauseVerdict", "StoreReport", "Verdict"]

Verdict = Literal["pass", "fail", "n/a"]


@dataclass(frozen=True)
class ClauseVerdict:
    """One clause run on one store.

    ``verdict`` is ``"pass"``, ``"fail"`` (``reason`` names the first findings:
    which item, what was expected, what came back) or ``"n/a"`` (the store does
    not offer what the clause checks: TTL on a store whose ``supports_ttl`` is
    False). A clause that raised fails, the exception in ``reason``.
    """

    clause: str
    verdict: Verdict
    reason: str
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.verdict != "fail"

    def __str__(self) -> str:
        return f"{self.clause:<18} {self.verdict:<4}  {self.reason}"


@dataclass(frozen=True)
class StoreReport:
    """Every clause's verdict on one store (``store``: its class name).

    ``ok`` is True when no clause failed; a clause the store does not offer
    (``n/a``) is shown, not counted against it.
    """

    store: str
    verdicts: tuple[ClauseVerdict, ...]
    seconds: float

    @property
    def ok(self) -> bool:
        return all(verdict.ok for verdict in self.verdicts)

    @property
    def failed(self) -> tuple[ClauseVerdict, ...]:
        return tuple(verdict for verdict in self.verdicts if not verdict.ok)

    def verdict(self, clause: str) -> ClauseVerdict:
        """The verdict of ``clause``; KeyError when it was not run."""
        for verdict in self.verdicts:
            if verdict.clause == clause:
                return verdict
        raise KeyError(f"clause {clause!r} was not run; ran "
                       f"{[v.clause for v in self.verdicts]}")

    def summary(self) -> str:
        """A verdict line, then one line per clause."""
        if self.ok:
            head = f"store check of {self.store}: ok"
        else:
            head = (f"store check of {self.store}: NOT OK: "
                    + ", ".join(v.clause for v in self.failed) + " failed")
        lines = [f"{head} ({len(self.verdicts)} clauses in {self.seconds:.1f} s)"]
        return "\n".join(lines + [f"  {verdict}" for verdict in self.verdicts])

    def __str__(self) -> str:
        return self.summary()
