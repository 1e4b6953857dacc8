"""What a health check found: the findings of ``chatledger doctor``.

Each backend reports its own (``backend.checks()``): a finding names what was
checked, how it went and the measured value, so that a person and a machine
(``--json``) read the same thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ._errors import BackendError

__all__ = ["Check", "ForeignLayout", "Status"]

Status = Literal["ok", "info", "warn", "fail"]


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, how it went, and the measured value."""

    name: str
    status: Status
    detail: str
    value: Any = None


class ForeignLayout(BackendError):
    """The database answered, and what the URL names is not laid out as chatledger
    lays it out (a DynamoDB table of another key schema): no retry fixes it, and
    the backend's checks name what is there instead (doctor reports it, exit 1)."""
