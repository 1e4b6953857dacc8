"""What a health check found: the findings of ``chatledger doctor``.

Each backend reports its own (``backend.checks()``): a finding names what was
checked, how it went and the measured value, so that a person and a machine
(``--json``) read the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Check", "Status"]

Status = Literal["ok", "info", "warn", "fail"]


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, how it went, and the measured value."""

    name: str
    status: Status
    detail: str
    value: Any = None
